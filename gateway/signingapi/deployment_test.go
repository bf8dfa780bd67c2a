package signingapi

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"testing"

	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// clusterFixture is a fixture whose deployment has a second node (its server key filed under the
// node's own name, as a clustered node files it) and a peer server reached through federation.
func clusterFixture(t *testing.T) (f *fixture, nodeB, peer ed25519.PrivateKey) {
	f = newFixture(t)
	_, nodeB, _ = ed25519.GenerateKey(rand.Reader)
	_, peer, _ = ed25519.GenerateKey(rand.Reader)
	bpub, ppub := nodeB.Public().(ed25519.PublicKey), peer.Public().(ed25519.PublicKey)
	f.mustPropose(fsm.RegisterKey{DID: "did:web:node-b.palaver.test", KID: signing.KID(bpub), PublicKey: bpub, Source: "server-key", Purpose: "msgsig"})
	f.mustPropose(fsm.RegisterKey{DID: "did:web:peer.example", KID: signing.KID(ppub), PublicKey: ppub, Source: "origin-server", Purpose: "msgsig"})
	return f, nodeB, peer
}

func TestDeploymentDIDListsEveryNodeKey(t *testing.T) {
	f, nodeB, peer := clusterFixture(t)
	own := signing.KID(f.server.Public().(ed25519.PublicKey))
	other := signing.KID(nodeB.Public().(ed25519.PublicKey))
	peerKID := signing.KID(peer.Public().(ed25519.PublicKey))
	did := "did:web:palaver.test"

	code, list := f.get("/api/v1/signing-keys/"+did, "")
	kids := map[string]bool{}
	keys, _ := list["keys"].([]any)
	for _, k := range keys {
		km := k.(map[string]any)
		if km["registered_at"] == nil {
			t.Errorf("key %v has no registered_at", km)
		}
		kids[km["kid"].(string)] = true
	}
	if code != 200 || len(keys) != 2 || !kids[own] || !kids[other] || list["public_key"] == nil {
		t.Fatalf("keys of the deployment = %d %v", code, list)
	}

	cases := []struct {
		name string
		did  string
		kid  string
		want int
	}{
		{"this node", did, own, 200},
		{"another node", did, other, 200},
		{"a peer server's key is not the deployment's", did, peerKID, 404},
		{"under the node's own name too", "did:web:node-b.palaver.test", other, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := f.doT(t, "GET", "/api/v1/signing-keys/"+tc.did+"/"+tc.kid, "", "")
			if code != tc.want || (code == 200 && (body["kid"] != tc.kid || body["did"] != tc.did || body["registered_at"] == nil)) {
				t.Fatalf("key = %d %v", code, body)
			}
		})
	}

	q := url.QueryEscape(did + "/" + other + "," + did + "/" + own + "," + did + "/" + peerKID)
	code, batch := f.get("/api/v1/signing-keys?keys="+q, "")
	got, _ := batch["keys"].([]any)
	if code != 200 || len(got) != 2 || got[0].(map[string]any)["kid"] != other || got[1].(map[string]any)["kid"] != own ||
		got[0].(map[string]any)["did"] != did || got[0].(map[string]any)["registered_at"] == nil {
		t.Fatalf("batch = %d %v", code, batch)
	}
}

func TestVerifyKeySourceOfDeploymentAndPeerKeys(t *testing.T) {
	f, nodeB, peer := clusterFixture(t)
	did := "did:key:carol"
	f.channel("#k", did)
	cases := []struct {
		name      string
		key       ed25519.PrivateKey
		keySource string
		keyDID    string
	}{
		{"signed by this node", f.server, "server-key", "did:web:palaver.test"},
		{"signed by another node of the deployment", nodeB, "server-key", "did:web:palaver.test"},
		{"signed by a peer server", peer, "origin-server", "did:web:peer.example"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := f.storeMsg("#k", did, tc.name, f.now, func(c []byte) string { return signing.Sign(tc.key, c) })
			code, body := f.doT(t, "GET", "/api/v1/verify/"+m.MsgID, "", "")
			v, _ := body["verification"].(map[string]any)
			key, _ := body["signing_key"].(map[string]any)
			if code != 200 || body["verdict"] != "valid" || v["verified_by"] != "server-key" || v["proves"] != "relay" ||
				body["key_source"] != tc.keySource || v["key_source"] != tc.keySource || key["did"] != tc.keyDID {
				t.Fatalf("verify = %d %v", code, body)
			}
		})
	}
}

func TestEvidenceCarriesCanonicalBytes(t *testing.T) {
	f, nodeB, _ := clusterFixture(t)
	did := "did:key:dave"
	msgs := f.storeMsg("#c", did, "signed by node b", f.now, func(c []byte) string { return signing.Sign(nodeB, c) })
	guest := f.storeMsg("#c", "", "a guest", f.now, nil)
	data, err := f.api.BuildEvidence(context.Background(), "#c", []eventstore.Message{msgs, guest})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := signing.VerifyBundle(data); err != nil {
		t.Fatalf("the bundle does not verify: %v", err)
	}
	var b struct {
		Messages []struct {
			MsgID         string  `json:"msgid"`
			CanonicalForm *string `json:"canonical_form"`
			CanonicalHex  *string `json:"canonical_hex"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(data, &b); err != nil || len(b.Messages) != 2 {
		t.Fatalf("bundle: %v %s", err, data)
	}
	venue, _ := signing.ChannelVenue("#c")
	want, _ := signing.Message{Envelope: signing.Envelope{From: did, MsgID: msgs.MsgID, Venue: venue}, Body: "signed by node b"}.Canonical()
	signed := b.Messages[0]
	if signed.CanonicalForm == nil || *signed.CanonicalForm != string(want) || signed.CanonicalHex == nil || *signed.CanonicalHex != hex.EncodeToString(want) {
		t.Fatalf("signed message canonical = %v / %v, want %s", signed.CanonicalForm, signed.CanonicalHex, want)
	}
	if b.Messages[1].CanonicalForm != nil || b.Messages[1].CanonicalHex != nil {
		t.Fatalf("an unsigned message carries canonical bytes: %s", data)
	}
	// The canonical bytes are sealed: changing them breaks the bundle signature.
	var raw map[string]any
	_ = json.Unmarshal(data, &raw)
	raw["messages"].([]any)[0].(map[string]any)["canonical_form"] = "{}"
	forged, _ := json.Marshal(raw)
	if _, err := signing.VerifyBundle(forged); err == nil {
		t.Fatal("a bundle with altered canonical bytes verified")
	}
}
