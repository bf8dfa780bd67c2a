package keyresolver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func keyIDs(keys []PublicKey) []string {
	ids := []string{}
	for _, k := range keys {
		ids = append(ids, k.ID+"/"+k.Type.String())
	}
	return ids
}

func TestDocumentAccessors(t *testing.T) {
	tests := []struct {
		file     string
		wantKeys []string
		wantPDS  string
		wantOK   bool
		handle   string
	}{
		{
			file:     "plc_document.json",
			wantKeys: []string{"did:plc:ewvi7nxzyoun6zhxrhs64oiz#atproto/secp256k1"},
			wantPDS:  "https://pds.example.com", wantOK: true,
			handle: "alice.example.com",
		},
		{
			file: "mixed_document.json",
			wantKeys: []string{
				"did:web:example.com#ed/ed25519",
				"did:web:example.com#inline/ed25519",
				"did:web:example.com#k1/secp256k1",
			},
			wantPDS: "https://pds.example.com/", wantOK: true,
			handle: "bob.example.com",
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			doc, err := ParseDocument(readTestdata(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if got := keyIDs(doc.CandidateKeys()); !reflect.DeepEqual(got, tt.wantKeys) {
				t.Errorf("CandidateKeys = %v, want %v", got, tt.wantKeys)
			}
			pds, ok := doc.PDSEndpoint()
			if pds != tt.wantPDS || ok != tt.wantOK {
				t.Errorf("PDSEndpoint = %q, %v", pds, ok)
			}
			if got := doc.Handle(); got != tt.handle {
				t.Errorf("Handle = %q, want %q", got, tt.handle)
			}
		})
	}
}

func TestParseDocumentRejects(t *testing.T) {
	for _, data := range []string{
		``, `null`, `[]`, `"did:web:x"`, `{}`, `{"id":"not-a-did"}`, `{"id":"did:web:x"} trailing`,
		`{"id":"did:web:x","alsoKnownAs":"at://x"}`, `{"id":"did:web:x","verificationMethod":{}}`,
		`{"id":"did:web:x","service":[1]}`, `{"id":"did:web:x","authentication":{}}`,
	} {
		if doc, err := ParseDocument([]byte(data)); err == nil {
			t.Errorf("ParseDocument(%q) = %+v, want error", data, doc)
		}
	}
}

func TestParseDocumentTolerates(t *testing.T) {
	doc, err := ParseDocument([]byte(`{"id":"did:web:x","service":[
		{"id":"#atproto_pds","type":["AtprotoPersonalDataServer"],"serviceEndpoint":"https://a"},
		{"id":"#atproto_pds","type":"AtprotoPersonalDataServer","serviceEndpoint":["https://b"]}],
		"unknown":{"deep":[1,2]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if pds, ok := doc.PDSEndpoint(); ok {
		t.Fatalf("PDSEndpoint = %q from non-string type/endpoint", pds)
	}
	if doc.Handle() != "" || len(doc.CandidateKeys()) != 0 {
		t.Fatal("empty document has a handle or keys")
	}
}

func TestDIDKeyDocument(t *testing.T) {
	for _, did := range []string{
		"did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
		"did:key:zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme",
	} {
		doc, err := DIDKeyDocument(did)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ParseDIDKey(did)
		if err != nil {
			t.Fatal(err)
		}
		keys := doc.CandidateKeys()
		if doc.ID != did || len(keys) != 1 || !reflect.DeepEqual(keys[0], want) {
			t.Fatalf("DIDKeyDocument(%q) keys = %+v, want %+v", did, keys, want)
		}
		var auth, assert string
		if json.Unmarshal(doc.Authentication[0], &auth) != nil || json.Unmarshal(doc.AssertionMethod[0], &assert) != nil ||
			auth != want.ID || assert != want.ID || doc.VerificationMethod[0].Type != "Multikey" {
			t.Fatalf("DIDKeyDocument(%q) = %+v", did, doc)
		}
	}
	if _, err := DIDKeyDocument("did:web:example.com"); err == nil {
		t.Fatal("DIDKeyDocument accepted did:web")
	}
}

func TestDocumentClone(t *testing.T) {
	doc, err := ParseDocument(readTestdata(t, "mixed_document.json"))
	if err != nil {
		t.Fatal(err)
	}
	c := doc.clone()
	if !reflect.DeepEqual(c, doc) {
		t.Fatal("clone differs")
	}
	c.AlsoKnownAs[0] = "changed"
	c.Authentication[1][1] = 'X'
	c.Service[0].ServiceEndpoint = "changed"
	if doc.AlsoKnownAs[0] == "changed" || doc.Authentication[1][1] == 'X' || doc.Service[0].ServiceEndpoint == "changed" {
		t.Fatal("clone shares memory with the original")
	}
}

func FuzzParseDocument(f *testing.F) {
	f.Add(readTestdata(f, "plc_document.json"))
	f.Add(readTestdata(f, "mixed_document.json"))
	f.Add([]byte(`{"id":"did:web:x","authentication":["#a",{"id":"#b","publicKeyMultibase":"z6Mk"}],"verificationMethod":[{"id":"#a"}]}`))
	f.Add([]byte(`{"id":"did:web:x","service":[{"id":"#atproto_pds","serviceEndpoint":{}}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := ParseDocument(data)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, k := range doc.CandidateKeys() {
			if seen[k.ID] {
				t.Fatalf("duplicate key id %q", k.ID)
			}
			seen[k.ID] = true
		}
		doc.PDSEndpoint()
		doc.Handle()
		if !reflect.DeepEqual(doc.clone(), doc) {
			t.Fatal("clone differs")
		}
	})
}
