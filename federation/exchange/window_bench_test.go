package exchange

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/node/eventstore"
)

// BenchmarkStreamFrames builds the frames of two peers' streams for pages of 500 new rows: each
// stream reading and encoding the rows itself ("per peer", as before the window) or through the
// shared window. One op is one page sent to both peers.
func BenchmarkStreamFrames(b *testing.B) {
	const page, peers = 500, 2
	store, err := eventstore.Open(context.Background(), eventstore.Options{Path: b.TempDir() + "/e.db", NoSync: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	const pages = 40
	for i := range pages * page / 100 {
		batch := make([]*eventstore.Message, 100)
		for j := range batch {
			batch[j] = &eventstore.Message{MsgID: ulid.Make().String(), Venue: fmt.Sprint("#c", j%16), Command: "PRIVMSG",
				Sender: "n!u@h", SenderNick: "n", SenderDID: "did:plc:abcdefghijklmnopqrstuvwx", Text: fmt.Sprint(i, " ", j, " ", string(make([]byte, 90))),
				Tags: map[string]string{"+freeq.at/sig": "ed25519:kid:" + string(make([]byte, 86)), "account": "n"}, Time: time.Now(), Origin: "a"}
		}
		if err := store.Append(context.Background(), batch...); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	load := func(ctx context.Context, after, through int64, limit int) ([]eventstore.Message, error) {
		return store.OriginThrough(ctx, "a", after, through, limit)
	}
	prefix := frameSigningInput("0123456789abcdef0123456789abcdef", nil)
	b.Run("per peer", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		i := 0
		for b.Loop() {
			pos := int64(i%pages) * page
			i++
			for range peers {
				rows, err := load(ctx, pos, pos+page, page)
				if err != nil || len(rows) != page {
					b.Fatal(len(rows), err)
				}
				sb := streamBatch{After: pos, Last: rows[len(rows)-1].Seq, Events: make([]Event, len(rows))}
				for k := range rows {
					sb.Events[k] = eventOf(rows[k])
				}
				buf = appendBatch(append(buf[:0], prefix...), sb)
			}
		}
	})
	b.Run("window", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		var w outWindow
		i := 0
		for b.Loop() {
			pos := int64(i%pages) * page
			i++
			for range peers {
				encs, last, err := w.read(ctx, pos, pos+page, page, load)
				if err != nil || len(encs) != page {
					b.Fatal(len(encs), err)
				}
				buf = appendBatchHead(append(buf[:0], prefix...), pos, last, len(encs))
				for _, e := range encs {
					buf = append(buf, e...)
				}
			}
		}
	})
}
