package testcluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// FaultKind names one kind of nemesis round.
type FaultKind string

const (
	// FaultKill kills a node (sometimes the leader) and restarts it on its data directory.
	FaultKill FaultKind = "kill"
	// FaultPartition cuts the network: the leader or another node isolated, or (five nodes or
	// more) a minority split from a majority; then heals it.
	FaultPartition FaultKind = "partition"
	// FaultTransfer hands leadership to another node through Raft's leadership transfer.
	FaultTransfer FaultKind = "transfer"
	// FaultSlowDisk delays every Raft log write of a node (sometimes the leader), then restores it.
	FaultSlowDisk FaultKind = "slow-disk"
	// FaultPoison has a node (sometimes the leader) store, as its own, rows no peer can accept:
	// a message over the limits of one item, one with a malformed venue, a delete and a reaction
	// with oversize tags (node.StorePoison). Its streams and the peers' pulls carry them; every
	// peer must record them as dead letters and go on, so the verdict still counts 0 lost and 0
	// duplicated among acknowledged messages.
	FaultPoison FaultKind = "poison"
	// FaultUpgrade replaces a node still running the previous version (ProcessOptions.Binary)
	// with ProcessOptions.UpgradeTo: SIGTERM, then the new version on the same data directory
	// (Cluster.Upgrade). Each round takes another node, the drawn one if it has not been
	// upgraded yet, otherwise the first that has not; with every node upgraded a round fails.
	// Processes only, and not part of AllFaults.
	FaultUpgrade FaultKind = "upgrade"
)

// PoisonVenue is the channel the poison fault's rows name (one the workload does not use).
const PoisonVenue = "#nemesis-poison"

// AllFaults is every kind, the default for nodes in this process.
var AllFaults = []FaultKind{FaultKill, FaultPartition, FaultTransfer, FaultSlowDisk, FaultPoison}

// ParseFaultKinds reads a comma-separated list of kinds ("all" for AllFaults).
func ParseFaultKinds(list string) ([]FaultKind, error) {
	if list == "all" {
		return AllFaults, nil
	}
	var out []FaultKind
	for _, name := range strings.Split(list, ",") {
		k := FaultKind(strings.TrimSpace(name))
		if !slices.Contains(AllFaults, k) && k != FaultUpgrade {
			return nil, fmt.Errorf("fault kind %q: want kill, partition, transfer, slow-disk, poison, upgrade or all", name)
		}
		out = append(out, k)
	}
	return out, nil
}

// NemesisOptions shape the fault schedule. Every choice (which kind, which node, how long to
// wait, how long a fault lasts) is drawn from the run's seed. One fault at a time, and at most
// a minority cut off or down, so the cluster keeps a quorum.
type NemesisOptions struct {
	MinInterval, MaxInterval time.Duration // between the end of a round and the next fault; default 1.5–4 s
	MinDown, MaxDown         time.Duration // how long a fault lasts (node down, cut, slow disk); default 0.3–2 s
	LeaderBias               float64       // probability of aiming at the leader rather than a random node; default 0.5
	MaxRounds                int           // 0: until the traffic ends
	// Kinds are drawn from uniformly each round; default AllFaults in this process, kill only
	// for processes (the other kinds need the nodes in this process).
	Kinds []FaultKind
	// InOrder takes the kinds in turn (round k does Kinds[(k-1) % len]) instead of drawing them.
	InOrder bool
	// MinDiskDelay, MaxDiskDelay bound the delay a slow-disk round adds to each log write;
	// default 20–150 ms.
	MinDiskDelay, MaxDiskDelay time.Duration
}

func (o *NemesisOptions) defaults() {
	if o.MaxInterval <= 0 {
		o.MinInterval, o.MaxInterval = 1500*time.Millisecond, 4*time.Second
	}
	if o.MaxDown <= 0 {
		o.MinDown, o.MaxDown = 300*time.Millisecond, 2*time.Second
	}
	if o.MaxDiskDelay <= 0 {
		o.MinDiskDelay, o.MaxDiskDelay = 20*time.Millisecond, 150*time.Millisecond
	}
	o.MinInterval = min(o.MinInterval, o.MaxInterval)
	o.MinDown = min(o.MinDown, o.MaxDown)
	o.MinDiskDelay = min(o.MinDiskDelay, o.MaxDiskDelay)
	if o.LeaderBias == 0 {
		o.LeaderBias = 0.5
	}
}

// NemesisEvent is one fault or repair.
type NemesisEvent struct {
	At     time.Duration // since the run began
	Round  int
	Kind   string // "kill", "restart", "partition", "heal", "transfer", "slow-disk", "disk-ok", "poison", "upgrade", "feature-gate"
	Fault  FaultKind
	Node   string        // the node aimed at ("" for a split)
	Detail string        // the sides of a partition, the new leader, the disk delay
	Leader bool          // the node aimed at was the leader
	Took   time.Duration // restart and transfer: how long it took
	Err    error
}

func (e NemesisEvent) String() string {
	s := fmt.Sprintf("%6.1fs round %d: %s", e.At.Seconds(), e.Round, e.Kind)
	if e.Node != "" {
		s += " " + e.Node
	}
	if e.Leader {
		s += " (leader)"
	}
	if e.Detail != "" {
		s += " " + e.Detail
	}
	if e.Took > 0 {
		s += fmt.Sprintf(" in %s", e.Took.Round(10*time.Millisecond))
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// nemesis runs fault rounds until ctx ends or MaxRounds; a round that began finishes (the node
// restarted, the network healed, the disk restored) even after ctx ends. repair bounds the
// repairs. It returns the rounds done. A failed restart ends it with an error; a transfer that
// failed (no leader at that moment, a transfer raft refused) is recorded and the rounds go on.
func nemesis(ctx, repair context.Context, c *Cluster, rec *recorder, rng *rand.Rand, o NemesisOptions, emit func(NemesisEvent)) (int, error) {
	n := &nemesisRun{c: c, rec: rec, rng: rng, o: o, emit: emit}
	for round := 1; o.MaxRounds == 0 || round <= o.MaxRounds; round++ {
		pause(ctx, n.between(o.MinInterval, o.MaxInterval))
		if ctx.Err() != nil {
			return round - 1, nil
		}
		kind := o.Kinds[(round-1)%len(o.Kinds)]
		if !o.InOrder {
			kind = o.Kinds[rng.IntN(len(o.Kinds))]
		}
		if err := n.round(repair, round, kind); err != nil {
			return round, fmt.Errorf("nemesis round %d (%s): %w", round, kind, err)
		}
	}
	return o.MaxRounds, nil
}

type nemesisRun struct {
	c    *Cluster
	rec  *recorder
	rng  *rand.Rand
	o    NemesisOptions
	emit func(NemesisEvent)
}

func (n *nemesisRun) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(n.rng.Int64N(int64(hi-lo)+1))
}

// target draws a node: the leader with probability LeaderBias (when one is known), otherwise
// any node.
func (n *nemesisRun) target() (int, bool) {
	target := n.rng.IntN(n.c.N())
	if n.rng.Float64() < n.o.LeaderBias {
		if l := n.c.Leader(); l >= 0 {
			return l, true
		}
	}
	return target, false
}

func (n *nemesisRun) event(round int, fault FaultKind, kind string, node int) NemesisEvent {
	e := NemesisEvent{At: n.rec.now(), Round: round, Kind: kind, Fault: fault}
	if node >= 0 {
		e.Node = n.c.addrs[node].Name
	}
	return e
}

// round draws every random choice before acting, so the schedule depends only on the seed and
// the leader at each moment.
func (n *nemesisRun) round(repair context.Context, round int, kind FaultKind) error {
	c := n.c
	target, isLeader := n.target()
	down := n.between(n.o.MinDown, n.o.MaxDown)
	switch kind {
	case FaultKill:
		ev := n.event(round, kind, "kill", target)
		ev.Leader = isLeader
		ev.Err = c.Kill(target)
		n.emit(ev)
		pause(repair, down)
		began := time.Now()
		err := c.Restart(repair, target)
		ev = n.event(round, kind, "restart", target)
		ev.Took, ev.Err = time.Since(began), err
		n.emit(ev)
		return err

	case FaultPartition:
		split := c.N() >= 5 && !isLeader && n.rng.IntN(2) == 0
		var sides [][]int
		ev := n.event(round, kind, "partition", target)
		if split { // a minority of two against the rest
			perm := n.rng.Perm(c.N())
			minority := perm[:(c.N()-1)/2]
			sides = [][]int{minority, slices.DeleteFunc(seq(c.N()), func(j int) bool { return slices.Contains(minority, j) })}
			ev.Node = ""
		} else {
			sides = [][]int{{target}, c.others(target)}
			ev.Leader = isLeader
		}
		ev.Detail = n.describeSides(sides)
		ev.Err = c.Partition(sides...)
		n.emit(ev)
		if ev.Err != nil {
			return ev.Err
		}
		pause(repair, down)
		c.Heal()
		n.emit(n.event(round, kind, "heal", -1))
		return nil

	case FaultTransfer:
		ev := n.event(round, kind, "transfer", -1)
		ctx, cancel := context.WithTimeout(repair, 10*time.Second)
		began := time.Now()
		from, to, err := c.TransferLeadership(ctx)
		cancel()
		ev.Took, ev.Err = time.Since(began), err
		if from >= 0 {
			ev.Node, ev.Leader = c.addrs[from].Name, true
		}
		if to >= 0 {
			ev.Detail = "to " + c.addrs[to].Name
		}
		n.emit(ev)
		return nil

	case FaultSlowDisk:
		delay := n.between(n.o.MinDiskDelay, n.o.MaxDiskDelay)
		ev := n.event(round, kind, "slow-disk", target)
		ev.Leader = isLeader
		ev.Detail = fmt.Sprintf("+%s per log write", delay.Round(time.Millisecond))
		ev.Err = c.SetDiskDelay(target, delay)
		n.emit(ev)
		if ev.Err != nil {
			return ev.Err
		}
		pause(repair, 2*down) // a slow disk needs a few writes to matter
		c.SetDiskDelay(target, 0)
		n.emit(n.event(round, kind, "disk-ok", target))
		return nil

	case FaultUpgrade:
		if c.Upgraded(target) {
			target = slices.IndexFunc(seq(c.N()), func(i int) bool { return !c.Upgraded(i) })
			if target < 0 {
				return errors.New("every node runs the new version already")
			}
			isLeader = c.Leader() == target
		}
		ev := n.event(round, kind, "upgrade", target)
		ev.Leader = isLeader
		n.emit(ev)
		began := time.Now()
		disk, err := c.Upgrade(repair, target)
		ev = n.event(round, kind, "restart", target)
		ev.Took, ev.Err = time.Since(began), err
		ev.Detail = "as the new version, on the previous one's " + disk.String()
		n.emit(ev)
		if err != nil {
			return err
		}
		// A change only the new version can apply: refused while a node of the previous one
		// remains, accepted once none does.
		all := !slices.ContainsFunc(seq(c.N()), func(i int) bool { return !c.Upgraded(i) })
		ev = n.event(round, kind, "feature-gate", target)
		ev.Detail, ev.Err = c.ProbeFeatureGate(repair, target, fmt.Sprintf("gate%d", round), all)
		ev.Detail = "MODE +i → " + ev.Detail
		n.emit(ev)
		if ev.Err != nil {
			return ev.Err
		}
		// An upload, whose record takes the previous version's shape while one remains.
		ev = n.event(round, kind, "upload", target)
		var id string
		id, ev.Err = c.ProbeUpload(repair, target, fmt.Sprintf("up%d", round))
		ev.Detail = "POST /api/v1/upload → "
		if ev.Err == nil {
			ev.Detail += "200 " + id
		}
		n.emit(ev)
		return ev.Err

	case FaultPoison:
		ev := n.event(round, kind, "poison", target)
		ev.Leader = isLeader
		ev.Err = c.StorePoison(repair, target)
		if ev.Err == nil {
			ev.Detail = "oversize and malformed rows on its stream and pull"
		}
		n.emit(ev)
		return nil
	}
	return fmt.Errorf("unknown fault kind %q", kind)
}

func (n *nemesisRun) describeSides(sides [][]int) string {
	parts := make([]string, len(sides))
	for k, side := range sides {
		names := make([]string, len(side))
		for m, i := range side {
			names[m] = strings.TrimSuffix(n.c.addrs[i].Name, ".testcluster")
		}
		parts[k] = "{" + strings.Join(names, " ") + "}"
	}
	return strings.Join(parts, " | ")
}
