package exchange

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/node/eventstore"
)

func TestBatchRoundTrip(t *testing.T) {
	full := Event{OriginSeq: 7, MsgID: "01ARZ3NDEKTSV4RRFFQ69G5FAV", Venue: "#chan", Command: "PRIVMSG",
		Sender: "n!u@h", SenderNick: "n", SenderDID: "did:plc:abc", Text: "héllo\x00world",
		Tags:   map[string]string{"+freeq.at/sig": "ed25519:k:AAAA", "msgid": "x", "+draft/reply": ""},
		TimeMS: 1700000000123, ReplacesMsgID: "01ARZ3NDEKTSV4RRFFQ69G5FAW", Incarnation: "inc-1", Public: true, Status: "@"}
	for _, tc := range []struct {
		name string
		b    streamBatch
	}{
		{"heartbeat", streamBatch{After: 42, Last: 42, Events: []Event{}}},
		{"one full event", streamBatch{After: 6, Last: 7, Events: []Event{full}}},
		{"minimal events", streamBatch{After: 0, Last: 1 << 40, Events: []Event{
			{OriginSeq: 1, MsgID: "a", Venue: "#x", Command: "TAGMSG", TimeMS: -5},
			{OriginSeq: 1 << 40, MsgID: "b", Venue: "dm:x", Command: "NOTICE", Text: strings.Repeat("z", 5000)},
		}}},
		{"every log", streamBatch{After: 6, Last: 7, Events: []Event{full},
			Dels: span{After: 3, Last: 9}, Deletions: []eventstore.Deletion{testDeletion(4), {Seq: 9, RootMsgID: "r", At: ms(-1)}},
			Reacts: span{After: 0, Last: 1 << 33}, Reactions: []eventstore.ReactionEvent{testReaction(1, true), testReaction(1<<33, false)}}},
		{"logs only", streamBatch{After: 5, Last: 5, Events: []Event{}, Dels: span{2, 2},
			Reacts: span{After: 10, Last: 11}, Reactions: []eventstore.ReactionEvent{testReaction(11, false)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc := appendBatch(nil, tc.b)
			got, err := decodeBatch(enc)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.b) {
				t.Fatalf("decoded %+v, want %+v", got, tc.b)
			}
			if again := appendBatch(nil, got); !bytes.Equal(again, enc) {
				t.Fatal("re-encoding differs")
			}
		})
	}
}

// ms is a time of unix milliseconds as a decoded frame holds it.
func ms(unixMilli int64) time.Time { return time.UnixMilli(unixMilli).UTC() }

func testDeletion(seq int64) eventstore.Deletion {
	return eventstore.Deletion{Seq: seq, RootMsgID: "01ARZ3NDEKTSV4RRFFQ69G5FAV", At: ms(1700000000999), Venue: "#chan",
		Deleter: eventstore.Deleter{Sender: "n!u@h", SenderDID: "did:plc:abc", Tags: map[string]string{"+draft/delete": "x", "msgid": "d"}}}
}

func testReaction(seq int64, remove bool) eventstore.ReactionEvent {
	return eventstore.ReactionEvent{Seq: seq, EventID: "01ARZ3NDEKTSV4RRFFQ69G5FAX", Root: "01ARZ3NDEKTSV4RRFFQ69G5FAV",
		Reactor: "did:plc:r", ReactorNick: "r", Emoji: "👍", Remove: remove, At: ms(1700000000001), Venue: "#chan",
		Sender: "r!u@h", SenderDID: "did:plc:r", Tags: map[string]string{"+draft/react": "👍"}}
}

func TestDecodeBatchRefusesMalformedInput(t *testing.T) {
	good := appendBatch(nil, streamBatch{After: 1, Last: 3, Events: []Event{{OriginSeq: 2, MsgID: "m", Venue: "#x",
		Command: "PRIVMSG", Tags: map[string]string{"a": "1", "b": "2"}, TimeMS: 1}}})
	tagsAt := bytes.Index(good, []byte{2, 1, 'a'}) // tag count 2, then "a"
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"unknown version", append([]byte{1}, good[1:]...)},
		{"truncated", good[:len(good)-1]},
		{"trailing bytes", append(append([]byte{}, good...), 0)},
		{"last before after", []byte{frameVersion, 5, 4, 0}},
		{"more events than bytes", []byte{frameVersion, 0, 0, 200}},
		{"event count over the bound", []byte{frameVersion, 0, 0, 0x81, 0x40}},
		{"event outside the range", appendBatch(nil, streamBatch{After: 1, Last: 3, Events: []Event{{OriginSeq: 4, MsgID: "m"}}})},
		{"event at after", appendBatch(nil, streamBatch{After: 1, Last: 3, Events: []Event{{OriginSeq: 1, MsgID: "m"}}})},
		{"tags out of order", func() []byte {
			b := append([]byte{}, good...)
			b[tagsAt+2], b[tagsAt+6] = 'b', 'a'
			return b
		}()},
		{"string longer than the input", []byte{frameVersion, 0, 1, 1, 1, 0xff, 0x01}},
		{"public not a boolean", func() []byte {
			b := appendBatch(nil, streamBatch{After: 0, Last: 1, Events: []Event{{OriginSeq: 1}}})
			b[len(b)-8] = 2 // public, then an empty status and two empty log sections
			return b
		}()},
		{"no log sections", good[:len(good)-6]},
		{"deletion outside its section", appendBatch(nil, streamBatch{Dels: span{1, 3}, Deletions: []eventstore.Deletion{testDeletion(4)}})},
		{"reaction at its section's after", appendBatch(nil, streamBatch{Reacts: span{4, 9}, Reactions: []eventstore.ReactionEvent{testReaction(4, false)}})},
		{"deletions last before after", append(good[:len(good)-6], 5, 4, 0, 0, 0, 0)},
		{"deletion count over the bound", append(good[:len(good)-6], 0, 0, 0x81, 0x40, 0, 0, 0)},
		{"reaction remove not a boolean", func() []byte {
			b := appendBatch(nil, streamBatch{Reacts: span{0, 1}, Reactions: []eventstore.ReactionEvent{{Seq: 1, At: ms(0)}}})
			b[len(b)-3] = 2 // remove, then time 0 and no tags
			return b
		}()},
		{"reaction tags out of order", func() []byte {
			r := testReaction(1, false)
			r.Tags = map[string]string{"a": "1", "b": "2"}
			b := appendBatch(nil, streamBatch{Reacts: span{0, 1}, Reactions: []eventstore.ReactionEvent{r}})
			i := bytes.LastIndex(b, []byte{2, 1, 'a'})
			b[i+2], b[i+6] = 'b', 'a'
			return b
		}()},
		{"seq over int64", []byte{frameVersion, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if b, err := decodeBatch(tc.in); err == nil {
				t.Fatalf("decoded %+v", b)
			}
		})
	}
}

// FuzzDecodeBatch: any input either fails or decodes to a batch that encodes back to it.
func FuzzDecodeBatch(f *testing.F) {
	f.Add(appendBatch(nil, streamBatch{After: 1, Last: 1}))
	f.Add(appendBatch(nil, streamBatch{After: 1, Last: 9, Events: []Event{{OriginSeq: 2, MsgID: "m", Venue: "#x",
		Command: "PRIVMSG", Tags: map[string]string{"a": "1", "b": "2"}, TimeMS: 1, Public: true}}}))
	f.Add([]byte{frameVersion, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(appendBatch(nil, streamBatch{After: 2, Last: 2, Dels: span{1, 4}, Deletions: []eventstore.Deletion{testDeletion(2), testDeletion(4)},
		Reacts: span{7, 8}, Reactions: []eventstore.ReactionEvent{testReaction(8, true)}}))
	f.Fuzz(func(t *testing.T, in []byte) {
		b, err := decodeBatch(in)
		if err != nil {
			return
		}
		if out := appendBatch(nil, b); !bytes.Equal(out, in) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", in, b, out)
		}
	})
}
