package exchange

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/node/eventstore"
)

// TestPullFormOfDeletesAndReactions: a pull's answer writes a delete and a reaction in the JSON
// form nodes of v0.1.0 read and write (their exchange.Deletion and exchange.Reaction), and reads
// that form back into the store's types, origin seq and time in milliseconds included.
func TestPullFormOfDeletesAndReactions(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123).UTC()
	del := eventstore.Deletion{Seq: 4, RootMsgID: "01ARZ3NDEKTSV4RRFFQ69G5FAV", At: at, Venue: "#x",
		Deleter: eventstore.Deleter{Sender: "n!u@h", SenderDID: "did:plc:n", Tags: map[string]string{"+draft/delete": "01ARZ3NDEKTSV4RRFFQ69G5FAV"}}}
	react := eventstore.ReactionEvent{Seq: 9, EventID: "01ARZ3NDEKTSV4RRFFQ69G5FAW", Root: "01ARZ3NDEKTSV4RRFFQ69G5FAV", Reactor: "did:plc:n",
		ReactorNick: "n", Emoji: "👍", Remove: true, At: at, Venue: "#x", Sender: "n!u@h", SenderDID: "did:plc:n", Tags: map[string]string{"+react": "👍"}}
	b := Batch{Origin: "did:web:a", Events: []Event{}, Deletions: []pullDeletion{pullDeletionOf(del)}, Reactions: []pullReaction{pullReactionOf(react)}}
	got, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	const v010 = `{"origin":"did:web:a","events":[],` +
		`"deletions":[{"origin_seq":4,"root_msgid":"01ARZ3NDEKTSV4RRFFQ69G5FAV","at_ms":1700000000123,"venue":"#x","sender":"n!u@h","sender_did":"did:plc:n","tags":{"+draft/delete":"01ARZ3NDEKTSV4RRFFQ69G5FAV"}}],` +
		`"reactions":[{"origin_seq":9,"event_msgid":"01ARZ3NDEKTSV4RRFFQ69G5FAW","root_msgid":"01ARZ3NDEKTSV4RRFFQ69G5FAV","reactor":"did:plc:n","reactor_nick":"n","emoji":"👍","remove":true,"at_ms":1700000000123,"venue":"#x","sender":"n!u@h","sender_did":"did:plc:n","tags":{"+react":"👍"}}]}`
	if string(got) != v010 {
		t.Fatalf("pull answer\n got %s\nwant %s", got, v010)
	}
	var back Batch
	if err := json.Unmarshal([]byte(v010), &back); err != nil {
		t.Fatal(err)
	}
	if d := back.Deletions[0].deletion(); !reflect.DeepEqual(d, del) {
		t.Errorf("delete read back as %+v, want %+v", d, del)
	}
	if r := back.Reactions[0].reaction(); !reflect.DeepEqual(r, react) {
		t.Errorf("reaction read back as %+v, want %+v", r, react)
	}
}
