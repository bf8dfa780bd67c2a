package eventstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkAppendReceivedFrames stores batches of 100 roots as a node receives another's stream
// (fsync off: the CPU cost): in the origin's order, stamped by 16 connections, so each root's
// millisecond jitters up to 5 ms behind the newest one stored. One op is one message.
func BenchmarkAppendReceivedFrames(b *testing.B) {
	s, _ := openTestStore(b, true)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 5))
	base := time.Now().Add(-time.Hour)
	const frame = 100
	msgs := make([]*Message, 0, frame)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		when := base.Add(time.Duration(i)*200*time.Microsecond - time.Duration(r.IntN(5000))*time.Microsecond)
		m := newMsg(fmt.Sprintf("r%09d", i), fmt.Sprintf("#c%d", i%16), when, "a message of about a hundred bytes, as the cross-node benchmark sends them, w1 w2 w3")
		m.Origin = "node-b"
		msgs = append(msgs, m)
		i++
		if len(msgs) == frame {
			if err := s.Append(ctx, msgs...); err != nil {
				b.Fatal(err)
			}
			msgs = msgs[:0]
		}
	}
}
