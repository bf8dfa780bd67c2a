package sasl

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/palaver-chat/palaver/keyresolver"
)

func benchmarkVerify(b *testing.B, s signer) {
	ch, err := NewChallenge("bench", baseTime, &countingReader{})
	if err != nil {
		b.Fatal(err)
	}
	resp := Response{DID: s.did, Method: "crypto", Signature: base64.RawURLEncoding.EncodeToString(s.sign(ch.JSON))}
	v := &Verifier{Resolver: keyresolver.New(keyresolver.Options{})}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Verify(ctx, ch, resp, baseTime); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyEd25519DIDKey(b *testing.B)   { benchmarkVerify(b, ed25519Signer(b, 1)) }
func BenchmarkVerifySecp256k1DIDKey(b *testing.B) { benchmarkVerify(b, secp256k1Signer(b, 2)) }
