package exchange

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/node/eventstore"
)

// TestEventCarriesChannelIncarnation: a copied message keeps the incarnation and publicity its
// origin stamped, so a node catching up after the channel was re-created never files an earlier
// channel's restricted message under the new one.
func TestEventCarriesChannelIncarnation(t *testing.T) {
	for _, public := range []bool{false, true} {
		m := eventstore.Message{Seq: 7, MsgID: "01SCOPE0000000000000000001", Venue: "#x", Command: "PRIVMSG",
			Sender: "a!u@h", SenderNick: "a", Text: "t", Time: time.UnixMilli(1_700_000_000_000),
			Incarnation: "abc.1", Public: public}
		raw, err := json.Marshal(eventOf(m))
		if err != nil {
			t.Fatal(err)
		}
		var e Event
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatal(err)
		}
		got := e.message("node-a")
		if got.Incarnation != "abc.1" || got.Public != public {
			t.Fatalf("public=%v: copied as incarnation %q public %v (wire %s)", public, got.Incarnation, got.Public, raw)
		}
	}
}
