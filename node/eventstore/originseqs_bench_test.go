package eventstore

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkOriginSeqs lists the seqs of the newest few rows of one origin out of three, as a
// stream does for every frame at 1,000 msg/s (a frame of about 4 rows). One op is one call.
func BenchmarkOriginSeqs(b *testing.B) {
	s, _ := openTestStore(b, true)
	ctx := context.Background()
	var batch []*Message
	for i := range 6000 {
		m := newMsg(fmt.Sprintf("s%05d", i), "#c", at(time.Duration(i)*time.Millisecond), "x")
		m.Origin = []string{"node-a", "node-b", "node-c"}[i%3]
		if batch = append(batch, m); len(batch) == 100 {
			if err := s.Append(ctx, batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		seqs, err := s.OriginSeqs(ctx, "node-b", 5988, 6000, 500)
		if err != nil || len(seqs) != 4 {
			b.Fatalf("%v, %v", seqs, err)
		}
	}
}
