package load

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"
)

// LeaderKillResult is what B10 measured around the kill of the leader.
type LeaderKillResult struct {
	Node string        `json:"node"`  // the killed leader
	Term uint64        `json:"term"`  // its term
	At   time.Duration `json:"at_ns"` // when, since the writers started
	// NewLeader and NewTerm are the leader the survivors agreed on;
	// Elected is the time from the kill until the health checks (polled
	// every 10 ms) showed it.
	NewLeader string        `json:"new_leader,omitempty"`
	NewTerm   uint64        `json:"new_term,omitempty"`
	Elected   time.Duration `json:"elected_ns"`
	// Recovery is the time from the kill to the first sighting, by an
	// observer, of a change sent after the kill: a change that cannot
	// have been committed by the killed leader. FirstSighting is the time
	// to the first sighting of any change after the kill (observers sit on
	// followers, which learn of a commit only from a leader, so this is
	// also, within the time of one delivery, a change committed by the new
	// leader). Recovered is false when no change sent after the kill was
	// seen.
	Recovery      time.Duration `json:"recovery_ns"`
	Recovered     bool          `json:"recovered"`
	FirstSighting time.Duration `json:"first_sighting_ns"`
	// MaxGap is the longest time between two consecutive sightings of
	// changes, over all observers, during the run.
	MaxGap time.Duration `json:"max_gap_ns"`
	Error  string        `json:"error,omitempty"`

	killedAt time.Time
}

// leaderKill kills the leader in the background.
type leaderKill struct {
	done chan struct{}
	res  LeaderKillResult
}

// startLeaderKill kills the node that reports itself leader (with the
// highest term) after the given delay, then polls the surviving nodes
// until they agree on a new leader.
func startLeaderKill(ctx context.Context, client *http.Client, t ClusterTarget, after, timeout time.Duration, out io.Writer, label string) *leaderKill {
	k := &leaderKill{done: make(chan struct{})}
	start := time.Now()
	go func() {
		defer close(k.done)
		timer := time.NewTimer(after)
		defer timer.Stop()
		select {
		case <-ctx.Done():
			k.res.Error = ctx.Err().Error()
			return
		case <-timer.C:
		}
		h := readClusterHealth(ctx, client, t.Nodes)
		leader := -1
		for i, n := range h.nodes {
			if h.errs[i] == nil && n.Role == "leader" && (leader < 0 || n.Term > h.nodes[leader].Term) {
				leader = i
			}
		}
		if leader < 0 || t.Nodes[leader].Kill == nil {
			k.res.Error = fmt.Sprintf("no leader to kill (%s)", h)
			return
		}
		k.res.Node, k.res.Term = t.nodeName(leader), h.nodes[leader].Term
		k.res.killedAt = time.Now()
		k.res.At = k.res.killedAt.Sub(start)
		if err := t.Nodes[leader].Kill(); err != nil {
			k.res.Error = err.Error()
			return
		}
		progressf(out, "%s: killed the leader %s (term %d) at %.2fs", label, k.res.Node, k.res.Term, k.res.At.Seconds())
		var survivors []int
		for i := range t.Nodes {
			if i != leader {
				survivors = append(survivors, i)
			}
		}
		h, next, err := waitSettled(ctx, client, t.Nodes, survivors, timeout)
		if err != nil {
			k.res.Error = err.Error()
			return
		}
		k.res.Elected = time.Since(k.res.killedAt)
		k.res.NewLeader, k.res.NewTerm = t.nodeName(next), h.nodes[next].Term
		progressf(out, "%s: %s leads in term %d, %.0f ms after the kill", label, k.res.NewLeader, k.res.NewTerm, millis(k.res.Elected))
	}()
	return k
}

// wait returns the result once the kill and the election are over.
func (k *leaderKill) wait() *LeaderKillResult {
	<-k.done
	return &k.res
}

// measureRecovery reads the changes' sightings for Recovery, FirstSighting
// and MaxGap.
func (r *LeaderKillResult) measureRecovery(pairs []*changePair) {
	var seen []time.Time
	for _, p := range pairs {
		changes, _ := p.writer.log.snapshot()
		for _, c := range changes {
			if c.final || c.observations == 0 {
				continue
			}
			seen = append(seen, c.observed)
			if r.killedAt.IsZero() || !c.observed.After(r.killedAt) {
				continue
			}
			after := c.observed.Sub(r.killedAt)
			if r.FirstSighting == 0 || after < r.FirstSighting {
				r.FirstSighting = after
			}
			if c.sent.After(r.killedAt) && (!r.Recovered || after < r.Recovery) {
				r.Recovery, r.Recovered = after, true
			}
		}
	}
	slices.SortFunc(seen, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(seen); i++ {
		r.MaxGap = max(r.MaxGap, seen[i].Sub(seen[i-1]))
	}
}
