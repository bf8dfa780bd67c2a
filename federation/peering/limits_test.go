package peering

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/node/limits"
)

// TestEnvelopeCarriesTheLargestItem: a message at the limits of one item (node/limits), its text
// and tags of characters JSON escapes to six bytes, sealed in an envelope, fits the envelope
// bound and parses back; an item is never too large for the envelope hop on its own.
func TestEnvelopeCarriesTheLargestItem(t *testing.T) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tags := map[string]string{}
	for i := range limits.Tags {
		k := fmt.Sprintf("+k%03d", i)
		tags[k] = strings.Repeat("<", limits.TagBytes/limits.Tags-len(k))
	}
	name := strings.Repeat("n", limits.NameBytes)
	b := Batch{From: "did:web:" + name, To: "did:web:" + name, Seq: math.MaxInt64, SentAt: math.MaxInt64,
		Events: []Event{{Seq: math.MaxInt64, MsgID: strings.Repeat("m", limits.MsgIDBytes), Venue: "#" + strings.Repeat("v", limits.VenueBytes-1),
			Command: "PRIVMSG", Sender: name, SenderNick: name, SenderDID: name, Text: strings.Repeat("<", limits.TextBytes), Tags: tags,
			TimeMS: math.MaxInt64, ReplacesMsgID: strings.Repeat("r", limits.MsgIDBytes)}}}
	env, err := Seal(key, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(env) > MaxEnvelopeBytes {
		t.Fatalf("an envelope of the largest item is %d bytes, over %d", len(env), MaxEnvelopeBytes)
	}
	if _, _, _, err := ParseEnvelope(env); err != nil {
		t.Fatalf("the envelope does not parse: %v", err)
	}
	if maxTextBytes < limits.TextBytes {
		t.Fatalf("peering cuts texts at %d bytes, below the %d an item may hold", maxTextBytes, limits.TextBytes)
	}
	t.Logf("the largest item sealed: %d bytes of %d", len(env), MaxEnvelopeBytes)
}
