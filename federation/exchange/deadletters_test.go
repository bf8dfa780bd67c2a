package exchange

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/node/limits"
)

// TestPoisonRowsDoNotStopAPeer: rows their origin stored but a receiver cannot accept (over the
// limits of one item, malformed) reach the receiver by the pull and by the stream, are recorded
// as dead letters and counted, and every row after them arrives: the receiver's cursor moves past
// them, and its health reports the peer's dead letters.
func TestPoisonRowsDoNotStopAPeer(t *testing.T) {
	for _, path := range []string{"pull", "stream"} {
		t.Run(path, func(t *testing.T) {
			c := newCluster(t, "a", "b")
			a, b := c.nodes["did:web:a"], c.nodes["did:web:b"]
			if path == "pull" {
				b.noStream.Store(true)
				a.noStream.Store(true)
			}
			before := a.say(t, "before")
			a.say(t, strings.Repeat("x", limits.TextBytes+1))
			a.say(t, "between")
			after := a.say(t, "after")
			if path == "pull" {
				b.x.PullAll(context.Background())
			}
			waitFor(t, "the row after the poison on b", func() bool { return b.count(after) == 1 && b.count(before) == 1 })
			// The stream publishes a batch's rows before it records the batch's dead letters.
			waitFor(t, "the poison recorded on b", func() bool {
				dead, err := b.store.DeadLetters(context.Background(), "did:web:a", 10)
				return err != nil || (len(dead) > 0 && deadLettersCounted(b.x, "did:web:a", ReasonOversize) > 0)
			})
			dead, err := b.store.DeadLetters(context.Background(), "did:web:a", 10)
			if err != nil || len(dead) != 1 || dead[0].Reason != ReasonOversize || dead[0].Seq != 2 || dead[0].Log != string(LogMessages) {
				t.Fatalf("dead letters %+v, %v; want the oversize row 2", dead, err)
			}
			if got := deadLettersCounted(b.x, "did:web:a", ReasonOversize); got != 1 {
				t.Fatalf("palaver_exchange_dead_letters_total = %v, want 1", got)
			}
			waitFor(t, "b's cursor past the poison", func() bool {
				cur, _ := ReadCursor(context.Background(), b.store, inCursor("a", LogMessages))
				return cur == 4
			})
			rep, err := b.x.Replication(context.Background())
			if err != nil || len(rep) != 1 || rep[0].DeadLetters != 1 || rep[0].Messages != 4 {
				t.Fatalf("replication %+v, %v", rep, err)
			}
		})
	}
}

// TestDeadLetterSeriesStartAtZero: the exchange's collector exports a dead-letter series for
// every live peer and reason before any item is refused (an alert on the counter's increase
// then sees the first one), and counts what is refused.
func TestDeadLetterSeriesStartAtZero(t *testing.T) {
	c := newCluster(t, "a", "b", "c")
	a := c.nodes["did:web:a"]
	series := func() []string {
		var out []string
		for _, m := range gatherOne(t, a.x.Metrics(), "palaver_exchange_dead_letters_total") {
			labels := labelsOf(m)
			out = append(out, fmt.Sprintf("%s/%s=%g", labels["peer"], labels["reason"], m.GetCounter().GetValue()))
		}
		return out
	}
	var want []string
	for _, peer := range []string{"did:web:b", "did:web:c"} {
		for _, reason := range deadLetterReasons {
			want = append(want, fmt.Sprintf("%s/%s=0", peer, reason))
		}
	}
	slices.Sort(want)
	if got := series(); !slices.Equal(got, want) {
		t.Fatalf("series %v, want %v", got, want)
	}
	a.x.deadLetters.WithLabelValues("did:web:b", ReasonOversize).Inc()
	if got := series(); !slices.Contains(got, "did:web:b/oversize=1") || len(got) != len(want) {
		t.Fatalf("after a dead letter: %v", got)
	}
}
