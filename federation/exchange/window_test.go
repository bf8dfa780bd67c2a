package exchange

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/node/eventstore"
)

// fakeLog is an origin's rows (seqs with gaps, as in a store that also holds other origins' rows)
// and counts the reads that reach it.
type fakeLog struct {
	seqs  []int64
	reads int
}

func (f *fakeLog) load(_ context.Context, after, through int64, limit int) ([]eventstore.Message, error) {
	f.reads++
	var out []eventstore.Message
	for _, s := range f.seqs {
		if s > after && s <= through && len(out) < limit {
			out = append(out, eventstore.Message{Seq: s, MsgID: fmt.Sprint("m", s), Venue: "#x", Command: "PRIVMSG",
				Sender: "a!u@h", Text: fmt.Sprint("row ", s), Time: time.UnixMilli(1_700_000_000_000 + s)})
		}
	}
	return out, nil
}

// TestWindowReadsMatchTheLog: whatever the order of the streams' reads, the window answers each
// exactly as the log would (the rows after pos through through, at most limit, encoded), and
// streams at the same position share one read of the log.
func TestWindowReadsMatchTheLog(t *testing.T) {
	var seqs []int64
	for s := int64(1); s <= 20000; s++ {
		if s%3 != 0 { // every third row is another origin's
			seqs = append(seqs, s)
		}
	}
	type step struct{ pos, through int64 }
	for _, tc := range []struct {
		name  string
		limit int
		steps []step
		reads int // reads of the log, -1: not checked
	}{
		{"two streams at one position share reads", 100, []step{{0, 50}, {0, 50}, {50, 400}, {50, 400}, {200, 400}, {200, 400}}, 3},
		{"a page short of through", 10, []step{{0, 100}, {14, 100}, {0, 100}}, 2},
		{"nothing new", 10, []step{{5, 5}, {5, 5}}, 0},
		{"a stream behind the window reads alone", 500, []step{{0, 10}, {9000, 16000}, {0, 10}, {9000, 16000}}, -1},
		{"a stream ahead of the window restarts it", 50, []step{{0, 20}, {1000, 1100}, {1000, 1100}}, 2},
		{"more than the window keeps", 4000, []step{{0, 7000}, {0, 7000}, {5000, 7000}, {6000, 12000}, {100, 200}}, -1},
		{"through below the window's head", 100, []step{{0, 300}, {0, 30}, {30, 60}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &fakeLog{seqs: seqs}
			var w outWindow
			for _, st := range tc.steps {
				got, last, err := w.read(context.Background(), st.pos, st.through, tc.limit, log.load)
				if err != nil {
					t.Fatal(err)
				}
				want, _ := (&fakeLog{seqs: seqs}).load(context.Background(), st.pos, st.through, tc.limit)
				wantLast := st.pos
				if len(want) > 0 {
					wantLast = want[len(want)-1].Seq
				}
				if last != wantLast || len(got) != len(want) {
					t.Fatalf("read(%d, %d): %d rows through %d, want %d through %d", st.pos, st.through, len(got), last, len(want), wantLast)
				}
				for i := range want {
					if !slices.Equal(got[i], encodeRow(want[i])) {
						t.Fatalf("read(%d, %d): row %d differs from the log's", st.pos, st.through, i)
					}
				}
				if len(w.seqs) > windowRows {
					t.Fatalf("the window holds %d rows, more than %d", len(w.seqs), windowRows)
				}
			}
			if tc.reads >= 0 && log.reads != tc.reads {
				t.Fatalf("%d reads of the log, want %d", log.reads, tc.reads)
			}
		})
	}
}

// TestEncodedRowsFormTheBatch: a frame built from a head and rows encoded one by one is the
// batch's binary form, so decodeBatch reads it back.
func TestEncodedRowsFormTheBatch(t *testing.T) {
	events := []Event{testEvent(3), testEvent(5)}
	events[1].Tags = map[string]string{"b": "2", "a": "1", "+freeq.at/sig": "x"}
	buf := appendBatchHead(nil, 2, 5, len(events))
	for i := range events {
		buf = appendEvent(buf, &events[i])
	}
	buf = appendLogs(buf, streamBatch{})
	if !slices.Equal(buf, appendBatch(nil, streamBatch{After: 2, Last: 5, Events: events})) {
		t.Fatal("head + events + logs differs from appendBatch")
	}
	b, err := decodeBatch(buf)
	if err != nil || len(b.Events) != 2 || b.Events[1].Tags["a"] != "1" || b.Last != 5 {
		t.Fatalf("decodeBatch = %+v, %v", b, err)
	}
}

// TestPublishedRowsMatchTheLog: the rows a stream takes from what Publish handed over are the
// rows the log holds, byte for byte in their frame form; a range holding a row that was never
// published (or one whose tags the log would change) is not served from memory.
func TestPublishedRowsMatchTheLog(t *testing.T) {
	c := newCluster(t, "a")
	a := c.nodes["did:web:a"]
	ctx := context.Background()
	for i := range 40 {
		a.say(t, fmt.Sprint("m ", i))
	}
	tagged := &eventstore.Message{MsgID: ulid.Make().String(), Venue: "#x", Command: "PRIVMSG", Sender: "a!u@h",
		SenderNick: "a", SenderDID: "did:plc:x", Text: "tagged", Time: time.Now(), Origin: "a",
		Tags: map[string]string{"+freeq.at/sig": "ed25519:k:s", "msgid": "m", "+x": "<&>"}}
	if err := a.store.Append(ctx, tagged); err != nil {
		t.Fatal(err)
	}
	a.x.Publish(*tagged)
	check := func(after, through int64, wantOK bool) {
		t.Helper()
		got, ok, err := a.x.window.fromPublished(ctx, a.store, "a", after, through, 500)
		if err != nil || ok != wantOK {
			t.Fatalf("fromPublished(%d, %d): ok %v, %v; want ok %v", after, through, ok, err, wantOK)
		}
		if !ok {
			return
		}
		want, err := a.store.OriginThrough(ctx, "a", after, through, 500)
		if err != nil || len(got) != len(want) {
			t.Fatalf("fromPublished(%d, %d): %d rows, the log %d (%v)", after, through, len(got), len(want), err)
		}
		for i := range want {
			if !slices.Equal(encodeRow(got[i]), encodeRow(want[i])) {
				t.Fatalf("row %d: published %+v, the log %+v", want[i].Seq, got[i], want[i])
			}
		}
	}
	check(0, 41, true)
	check(10, 20, true)

	unpublished := &eventstore.Message{MsgID: ulid.Make().String(), Venue: "#x", Command: "PRIVMSG", Sender: "a!u@h",
		SenderNick: "a", Text: "stored, never published", Time: time.Now(), Origin: "a"}
	badTag := &eventstore.Message{MsgID: ulid.Make().String(), Venue: "#x", Command: "PRIVMSG", Sender: "a!u@h",
		SenderNick: "a", Text: "a tag the log would change", Time: time.Now(), Origin: "a", Tags: map[string]string{"+x": "\xff"}}
	for _, m := range []*eventstore.Message{unpublished, badTag} {
		if err := a.store.Append(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	a.x.Publish(*badTag)
	check(0, 41, true)
	check(40, unpublished.Seq, false)
	check(unpublished.Seq, badTag.Seq, false)
}
