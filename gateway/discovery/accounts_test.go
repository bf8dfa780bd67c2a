package discovery_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/discovery"
)

func TestHostedAccountDIDDocument(t *testing.T) {
	s := newServer(t, options{})
	resp, body := s.get(t, "/u/bar/did.json")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var doc struct {
		ID                 string `json:"id"`
		VerificationMethod []struct {
			ID, Type, Controller, PublicKeyMultibase string
		} `json:"verificationMethod"`
		AssertionMethod []string `json:"assertionMethod"`
		Authentication  []string `json:"authentication"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	const did = "did:web:docs.test:u:bar"
	if doc.ID != did || len(doc.VerificationMethod) != 1 || doc.VerificationMethod[0].ID != did+"#k-live" ||
		doc.VerificationMethod[0].Controller != did || !strings.HasPrefix(doc.VerificationMethod[0].PublicKeyMultibase, "z6Mk") ||
		len(doc.AssertionMethod) != 1 || doc.AssertionMethod[0] != did+"#k-live" || len(doc.Authentication) != 0 {
		t.Fatalf("document %s", body)
	}
	for _, path := range []string{"/u/nobody/did.json", "/u/Bar/did.json"} {
		if resp, body := s.get(t, path); resp.StatusCode != 404 || !strings.Contains(string(body), `"status"`) {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
}

func TestAuthDocumentsNameLogins(t *testing.T) {
	for _, tc := range []struct {
		reg  discovery.Registration
		want []string
	}{
		{discovery.Registration{}, []string{"PASSWORD ADD irssi", "SCRAM-SHA-256", "registration is off on this deployment", "`REGISTER`) is off"}},
		{discovery.Registration{Enabled: true, PerAddressPerHour: 2}, []string{"REGISTER * * <password>", "did:web:docs.test:u:<name>", "2 per client address"}},
	} {
		s := newServer(t, options{reg: tc.reg})
		_, auth := s.get(t, "/auth.md")
		_, agents := s.get(t, "/agents.md")
		all := string(auth) + string(agents)
		for _, w := range tc.want {
			if !strings.Contains(all, w) {
				t.Errorf("registration %+v: %q missing from auth.md and agents.md", tc.reg, w)
			}
		}
	}
}
