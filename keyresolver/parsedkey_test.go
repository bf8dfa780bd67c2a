package keyresolver

import (
	"testing"
)

// A did:key document hands out the key it parsed when it was made; the key
// verifies like a freshly parsed one, and a caller's edit of the document's
// methods is still honoured.
func TestDIDKeyDocumentReusesParsedKey(t *testing.T) {
	msg := []byte("challenge bytes")
	tests := []struct {
		name string
		seed byte
	}{
		{"secp256k1 seed 1", 1},
		{"secp256k1 seed 2", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			priv, pub := testSecp256k1(tt.seed)
			mb, err := EncodeMultikey(pub)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := DIDKeyDocument("did:key:" + mb)
			if err != nil {
				t.Fatal(err)
			}
			sig := signSecp256k1(priv, msg)
			keys := doc.CandidateKeys()
			if len(keys) != 1 || !keys[0].Verify(msg, sig) {
				t.Fatalf("candidate keys %+v do not verify the signature", keys)
			}
			if !pub.Verify(msg, sig) {
				t.Fatal("a key without its decompressed point does not verify")
			}
			keys[0].Raw[1] ^= 0xff // the caller's copy; the document's key is untouched
			if again := doc.CandidateKeys(); len(again) != 1 || !again[0].Verify(msg, sig) {
				t.Fatal("editing a returned key changed the document's key")
			}

			_, other := testSecp256k1(tt.seed + 100)
			otherMB, err := EncodeMultikey(other)
			if err != nil {
				t.Fatal(err)
			}
			doc.VerificationMethod[0].PublicKeyMultibase = otherMB
			edited := doc.CandidateKeys()
			if len(edited) != 1 || string(edited[0].Raw) != string(other.Raw) || edited[0].Verify(msg, sig) {
				t.Fatalf("after editing the method, candidate keys = %+v, want the new key", edited)
			}
		})
	}
}

// BenchmarkDIDKeySecp256k1Verify is the SASL path for a secp256k1 did:key:
// synthesize the document, list its keys, verify one signature.
func BenchmarkDIDKeySecp256k1Verify(b *testing.B) {
	priv, pub := testSecp256k1(7)
	mb, err := EncodeMultikey(pub)
	if err != nil {
		b.Fatal(err)
	}
	did := "did:key:" + mb
	msg := []byte(`{"session_id":"s","nonce":"n","timestamp":1}`)
	sig := signSecp256k1(priv, msg)
	b.ReportAllocs()
	for b.Loop() {
		doc, err := DIDKeyDocument(did)
		if err != nil {
			b.Fatal(err)
		}
		if keys := doc.CandidateKeys(); len(keys) != 1 || !keys[0].Verify(msg, sig) {
			b.Fatal("did not verify")
		}
	}
}
