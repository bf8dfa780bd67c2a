package sasl

import (
	"context"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/keyresolver"
)

// FuzzConversation feeds random AUTHENTICATE argument sequences (one per
// line of the input) to a conversation. The context is cancelled so that no
// DID needing the network is ever fetched; did:key responses are still
// verified in full.
func FuzzConversation(f *testing.F) {
	ed := ed25519Signer(f, 1)
	seedConv := NewConversation(nil, "fuzz", &countingReader{})
	first := parseChallenge(f, seedConv.Handle(context.Background(), Mechanism, baseTime).Payload)
	f.Add(Mechanism + "\n" + ed.signedResponse(f, first))
	f.Add(Mechanism + "\n" + strings.Repeat("A", ChunkSize) + "\n+")
	f.Add("PLAIN\n*\n" + Mechanism + "\n*\n+\n\n")
	f.Add(Mechanism + "\n" + encodeResponse(f, map[string]any{"did": "did:web:example.com", "signature": "AA", "method": "atproto"}))
	f.Add(strings.Repeat(Mechanism+"\nx\n", 5))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	resolver := keyresolver.New(keyresolver.Options{})
	f.Fuzz(func(t *testing.T, input string) {
		conv := NewConversation(&Verifier{Resolver: resolver}, "fuzz", &countingReader{})
		stopped := false
		for _, param := range strings.Split(input, "\n") {
			res := conv.Handle(ctx, param, baseTime)
			if stopped && res.Outcome != OutcomeIgnored {
				t.Fatalf("after too many failures %q gave %+v", param, res)
			}
			if res.Outcome == OutcomeTooManyFailures {
				stopped = true
			}
			if res.Counted && res.Outcome != OutcomeFailure && res.Outcome != OutcomeTooManyFailures {
				t.Fatalf("counted %+v", res)
			}
			if conv.Failures() > MaxFailures {
				t.Fatalf("Failures = %d", conv.Failures())
			}
		}
	})
}
