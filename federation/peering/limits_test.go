package peering

import (
	"crypto/ed25519"
	"crypto/rand"
	"math"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/node/limits"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// TestEnvelopeCarriesTheLargestTopics: an envelope of as many topics as a batch may hold, each
// at the longest topic, of characters JSON escapes to six bytes, with names at the limits of one
// item (node/limits), fits the envelope bound and parses back. (Chat items travel on the stream,
// whose frames have their own bound; peering still keeps a message's text whole.)
func TestEnvelopeCarriesTheLargestTopics(t *testing.T) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat("n", limits.NameBytes)
	b := Batch{From: "did:web:" + name, To: "did:web:" + name, Seq: math.MaxInt64, SentAt: math.MaxInt64}
	for range MaxBatchItems {
		b.Topics = append(b.Topics, Topic{Channel: "#" + strings.Repeat("v", limits.VenueBytes-1), Text: strings.Repeat("<", fsm.MaxTopicLen),
			SetBy: name, SetByDID: name, AtMS: math.MaxInt64, RequestID: strings.Repeat("r", limits.MsgIDBytes), RequestSig: name})
	}
	env, err := Seal(key, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(env) > MaxEnvelopeBytes {
		t.Fatalf("an envelope of the largest topics is %d bytes, over %d", len(env), MaxEnvelopeBytes)
	}
	if _, _, _, err := ParseEnvelope(env); err != nil {
		t.Fatalf("the envelope does not parse: %v", err)
	}
	if maxTextBytes < limits.TextBytes {
		t.Fatalf("peering cuts texts at %d bytes, below the %d an item may hold", maxTextBytes, limits.TextBytes)
	}
	t.Logf("the largest topics sealed: %d bytes of %d", len(env), MaxEnvelopeBytes)
}
