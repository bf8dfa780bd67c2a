package coord

import (
	"encoding/base64"
	"encoding/json"
	"testing"
)

// FuzzParseManifest: any input is either refused with an error or gives a manifest whose JSON
// encoding parses again to the same encoding.
func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(`{"agent":{"display_name":"A"},"provenance":{"origin_type":"x","creator_did":"did:plc:a","revocation_authority":"did:plc:a"}}`))
	f.Add([]byte("[agent]\ndisplay_name = \"A\"\n[provenance]\norigin_type = \"x\"\ncreator_did = \"did:plc:a\"\nrevocation_authority = \"did:plc:a\"\n"))
	f.Add([]byte("[capabilities.channels]\n\"#a\" = [1]"))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, out, err := ParseManifest(data, 16<<10)
		if err != nil {
			return
		}
		_, again, err := ParseManifest(out, 16<<10)
		if err != nil || string(again) != string(out) {
			t.Fatalf("re-parsing %s: %s, %v", out, again, err)
		}
	})
}

// FuzzProvenance: any PROVENANCE parameter is refused or checked without a panic; only a
// certificate for the submitter can verify, and a verified one names a principal.
func FuzzProvenance(f *testing.F) {
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`{"type":"FreeqBotDelegation/v1","bot_did":"did:plc:b","creator_did":"did:key:z6Mk","created_at":"2026-01-01T00:00:00Z","signature":"AAAA"}`)))
	f.Add(base64.RawURLEncoding.EncodeToString([]byte(`{"name":"bot"}`)))
	f.Add("!!")
	f.Fuzz(func(t *testing.T, param string) {
		doc, raw, err := DecodeProvenance(param)
		if err != nil {
			return
		}
		if !json.Valid(raw) {
			t.Fatalf("accepted invalid JSON %q", raw)
		}
		d, err := VerifyDelegation(doc, raw, "did:plc:b", nil)
		if err == nil && d.Verified && (d.Principal == "" || doc["bot_did"] != "did:plc:b") {
			t.Fatalf("verified %+v for %v", d, doc)
		}
	})
}

// FuzzParseKV: keys come out lowercased and non-empty, at most maxKVPairs of them.
func FuzzParseKV(f *testing.F) {
	f.Add("state=active;ttl=60")
	f.Add("class=agent")
	f.Add(";;=;")
	f.Fuzz(func(t *testing.T, s string) {
		kv, err := ParseKV(s)
		if err != nil {
			return
		}
		if len(kv) > maxKVPairs {
			t.Fatalf("%d pairs", len(kv))
		}
		for k := range kv {
			if k == "" {
				t.Fatalf("empty key from %q", s)
			}
		}
	})
}
