package signing

import (
	"crypto/ed25519"
	"testing"
)

// TestVerifyCacheAnswersAsVerify: for every input, first and repeated, the cache gives Verify's
// verdict and reason; the key lookup keeps deciding (a key that stops resolving, as a retired
// one does, makes a remembered valid signature unverifiable).
func TestVerifyCacheAnswersAsVerify(t *testing.T) {
	priv, pub := testKey(1)
	_, other := testKey(2)
	canon := []byte(`{"body":"sha256:00","from":"did:key:z","type":"message"}`)
	tag := Sign(priv, canon)
	keys := Keys{}
	keys.Add(pub)
	wrongKID := map[string]ed25519.PublicKey{KID(pub): other}
	tampered := append([]byte{}, canon...)
	tampered[len(tampered)-2] = 'X'
	cases := []struct {
		name   string
		canon  []byte
		tag    string
		lookup KeyLookup
	}{
		{"valid", canon, tag, keys.Lookup},
		{"tampered", tampered, tag, keys.Lookup},
		{"unsigned", canon, "", keys.Lookup},
		{"unknown key", canon, tag, Keys{}.Lookup},
		{"retired key", canon, tag, func(string) (ed25519.PublicKey, bool) { return nil, false }},
		{"key for another kid", canon, tag, func(kid string) (ed25519.PublicKey, bool) { k, ok := wrongKID[kid]; return k, ok }},
		{"malformed tag", canon, "ed25519:" + KID(pub) + ":!!", keys.Lookup},
	}
	vc := NewVerifyCache(16)
	for round := range 3 {
		for _, tc := range cases {
			wantV, wantR := Verify(tc.canon, tc.tag, tc.lookup)
			gotV, gotR := vc.Verify(tc.canon, tc.tag, tc.lookup)
			if gotV != wantV || gotR != wantR {
				t.Errorf("round %d, %s: cache says %v %s, Verify %v %s", round, tc.name, gotV, gotR, wantV, wantR)
			}
		}
	}
	if n := len(vc.results); n != 2 {
		t.Errorf("%d checks remembered, want 2 (valid and tampered)", n)
	}
}

// TestVerifyCacheStaysBounded: a full cache starts over instead of growing.
func TestVerifyCacheStaysBounded(t *testing.T) {
	priv, pub := testKey(3)
	keys := Keys{}
	keys.Add(pub)
	vc := NewVerifyCache(4)
	for i := range 10 {
		canon := []byte{'m', byte(i)}
		if v, _ := vc.Verify(canon, Sign(priv, canon), keys.Lookup); v != Valid {
			t.Fatalf("message %d: %v", i, v)
		}
		if len(vc.results) > 4 {
			t.Fatalf("%d entries after %d checks, bound 4", len(vc.results), i+1)
		}
	}
}

func BenchmarkVerifyCacheHit(b *testing.B) {
	priv, pub := testKey(1)
	keys := Keys{}
	keys.Add(pub)
	canon := mustCanonical(b, benchMessage(b))
	tag := Sign(priv, canon)
	vc := NewVerifyCache(1024)
	b.ReportAllocs()
	for b.Loop() {
		if v, _ := vc.Verify(canon, tag, keys.Lookup); v != Valid {
			b.Fatal(v)
		}
	}
}
