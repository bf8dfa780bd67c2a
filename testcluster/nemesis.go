package testcluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// NemesisOptions shape the fault schedule. Every choice (which node, how long to wait, how long a
// node stays down) is drawn from the run's seed. One node at most is down at a time, so a
// cluster of three keeps its quorum.
//
// Faults injected: kill (node.Close after cutting its clients) and restart on the same data
// directory and addresses, of a random node or of the current leader (which forces an election).
// Not injected: leadership transfer (package raft does not expose one), network partitions
// (nodes talk over real TCP with no transport wrapper between them) and slow disks.
type NemesisOptions struct {
	MinInterval, MaxInterval time.Duration // between a restart and the next kill; default 1.5–4 s
	MinDown, MaxDown         time.Duration // how long a killed node stays down; default 0.3–2 s
	LeaderBias               float64       // probability of killing the leader rather than a random node; default 0.5
	MaxRounds                int           // 0: until the traffic ends
}

func (o *NemesisOptions) defaults() {
	if o.MaxInterval <= 0 {
		o.MinInterval, o.MaxInterval = 1500*time.Millisecond, 4*time.Second
	}
	if o.MaxDown <= 0 {
		o.MinDown, o.MaxDown = 300*time.Millisecond, 2*time.Second
	}
	o.MinInterval = min(o.MinInterval, o.MaxInterval)
	o.MinDown = min(o.MinDown, o.MaxDown)
	if o.LeaderBias == 0 {
		o.LeaderBias = 0.5
	}
}

// NemesisEvent is one fault or repair.
type NemesisEvent struct {
	At     time.Duration // since the run began
	Round  int
	Kind   string // "kill" or "restart"
	Node   string
	Leader bool          // kill: the node was the leader
	Took   time.Duration // restart: how long the start took
	Err    error
}

func (e NemesisEvent) String() string {
	s := fmt.Sprintf("%6.1fs round %d: %s %s", e.At.Seconds(), e.Round, e.Kind, e.Node)
	if e.Leader {
		s += " (leader)"
	}
	if e.Kind == "restart" {
		s += fmt.Sprintf(" in %s", e.Took.Round(10*time.Millisecond))
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// nemesis runs kill/restart rounds until ctx ends or MaxRounds; a round that began finishes (the
// node is restarted) even after ctx ends. repair bounds restarts. It returns the rounds done.
func nemesis(ctx, repair context.Context, c *Cluster, rec *recorder, rng *rand.Rand, o NemesisOptions, emit func(NemesisEvent)) (int, error) {
	between := func(lo, hi time.Duration) time.Duration {
		return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
	}
	for round := 1; o.MaxRounds == 0 || round <= o.MaxRounds; round++ {
		pause(ctx, between(o.MinInterval, o.MaxInterval))
		if ctx.Err() != nil {
			return round - 1, nil
		}
		target, isLeader := rng.IntN(c.N()), false
		if rng.Float64() < o.LeaderBias {
			if l := c.Leader(); l >= 0 {
				target, isLeader = l, true
			}
		}
		down := between(o.MinDown, o.MaxDown)
		ev := NemesisEvent{At: rec.now(), Round: round, Kind: "kill", Node: c.addrs[target].Name, Leader: isLeader}
		ev.Err = c.Kill(target)
		emit(ev)
		pause(repair, down)
		began := time.Now()
		err := c.Restart(repair, target)
		emit(NemesisEvent{At: rec.now(), Round: round, Kind: "restart", Node: c.addrs[target].Name, Took: time.Since(began), Err: err})
		if err != nil {
			return round, fmt.Errorf("nemesis round %d: %w", round, err)
		}
	}
	return o.MaxRounds, nil
}
