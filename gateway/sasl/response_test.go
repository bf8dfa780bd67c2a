package sasl

import (
	"encoding/base64"
	"errors"
	"testing"
)

func TestDecodeResponse(t *testing.T) {
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name    string
		payload string
		want    Response
		ok      bool
	}{
		{"minimal", enc(`{"did":"did:key:z6Mk","signature":"sig"}`), Response{DID: "did:key:z6Mk", Signature: "sig"}, true},
		{"all members", enc(`{"did":"did:web:a","signature":"tok","method":"atproto","pds_url":"https://p","challenge_nonce":"n","dpop_proof":"x","extra":[1]}`),
			Response{DID: "did:web:a", Signature: "tok", Method: "atproto", PDSURL: "https://p", ChallengeNonce: "n"}, true},
		{"null optional", enc(`{"did":"did:web:a","signature":"s","method":null}`), Response{DID: "did:web:a", Signature: "s"}, true},
		{"whitespace", enc(" {\"did\" : \"did:web:a\",\n\"signature\":\"s\"} "), Response{DID: "did:web:a", Signature: "s"}, true},
		{"padded", base64.URLEncoding.EncodeToString([]byte(`{"did":"did:web:a","signature":"s"}`)), Response{}, false},
		{"standard alphabet", base64.RawStdEncoding.EncodeToString([]byte(`{"did":"did:web:a","signature":"s>>?"}`)), Response{}, false},
		{"line break", enc(`{"did":"did:web:a",`) + "\n" + enc(`"signature":"s"}`), Response{}, false},
		{"not JSON", enc(`hello`), Response{}, false},
		{"JSON array", enc(`[]`), Response{}, false},
		{"JSON null", enc(`null`), Response{}, false},
		{"trailing data", enc(`{"did":"did:web:a","signature":"s"}x`), Response{}, false},
		{"missing did", enc(`{"signature":"s"}`), Response{}, false},
		{"did without prefix", enc(`{"did":"web:a","signature":"s"}`), Response{}, false},
		{"did not a string", enc(`{"did":42,"signature":"s"}`), Response{}, false},
		{"missing signature", enc(`{"did":"did:web:a"}`), Response{}, false},
		{"empty signature", enc(`{"did":"did:web:a","signature":""}`), Response{}, false},
		{"method not a string", enc(`{"did":"did:web:a","signature":"s","method":1}`), Response{}, false},
		{"member names are case-sensitive", enc(`{"DID":"did:web:a","signature":"s"}`), Response{}, false},
		{"empty", "", Response{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeResponse(tt.payload)
			if !tt.ok {
				if !errors.Is(err, ErrBadResponse) {
					t.Fatalf("DecodeResponse = %+v, %v; want ErrBadResponse", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("DecodeResponse = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func FuzzDecodeResponse(f *testing.F) {
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, seed := range []string{
		enc(`{"did":"did:key:z6Mk","signature":"sig"}`),
		enc(`{"did":"did:web:a","signature":"tok","method":"atproto","pds_url":"https://p","challenge_nonce":"n"}`),
		enc(`{"did":null}`), enc(`[]`), "", "+", "*", "====", "\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		r, err := DecodeResponse(payload)
		if err != nil {
			if !errors.Is(err, ErrBadResponse) {
				t.Fatalf("error %v does not wrap ErrBadResponse", err)
			}
			return
		}
		if len(r.DID) < 4 || r.DID[:4] != "did:" || r.Signature == "" {
			t.Fatalf("accepted %+v", r)
		}
	})
}
