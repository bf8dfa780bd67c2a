package raft

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Timing is how fast a cluster notices a dead leader and spreads commits. Every node of a cluster
// should run the same timing. There are no defaults here: a Config takes a named profile
// (Profile), with single values overridden by the operator.
type Timing struct {
	// HeartbeatTimeout is how long a follower goes without hearing from the leader before it
	// calls an election: shorter fails over sooner after a leader dies, longer tolerates slower
	// links and starved machines (BENCHMARKS.md, B10).
	HeartbeatTimeout time.Duration
	// ElectionTimeout is how long a candidate waits for votes before it tries again; at least
	// HeartbeatTimeout.
	ElectionTimeout time.Duration
	// LeaderLeaseTimeout is how long a leader stays leader without reaching a quorum; at most
	// HeartbeatTimeout.
	LeaderLeaseTimeout time.Duration
	// CommitTimeout is how long an idle leader waits before sending followers an empty append
	// that carries the new commit index. A forwarded write waits for it on its follower
	// (raft's own default is 50 ms); a busy leader sends sooner with the next entry (B8).
	CommitTimeout time.Duration
}

// The timing profiles.
const (
	// ProfileProduction is what `palaver serve` ships: fail-over within about a second of a
	// leader's death (B10), a change made on a follower visible everywhere within milliseconds (B8).
	ProfileProduction = "production"
	// ProfileTest is for in-process test clusters on a loaded machine, where several nodes, the
	// race detector and other test processes share a few cores: a starved node must not call
	// elections the test did not ask for, so timeouts are twice production's, and the commit
	// timeout 10 ms.
	ProfileTest = "test"
)

var profiles = map[string]Timing{
	ProfileProduction: {HeartbeatTimeout: 250 * time.Millisecond, ElectionTimeout: 250 * time.Millisecond, LeaderLeaseTimeout: 250 * time.Millisecond, CommitTimeout: 2 * time.Millisecond},
	ProfileTest:       {HeartbeatTimeout: 500 * time.Millisecond, ElectionTimeout: 500 * time.Millisecond, LeaderLeaseTimeout: 250 * time.Millisecond, CommitTimeout: 10 * time.Millisecond},
}

// ProfileNames lists the timing profiles, sorted.
func ProfileNames() []string {
	names := make([]string, 0, len(profiles))
	for name := range profiles {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Profile returns the named timing profile.
func Profile(name string) (Timing, error) {
	t, ok := profiles[name]
	if !ok {
		return Timing{}, fmt.Errorf("raft timing profile %q: want one of %s", name, strings.Join(ProfileNames(), ", "))
	}
	return t, nil
}

// MustProfile is Profile for names known to exist (the constants above); it panics otherwise.
func MustProfile(name string) Timing {
	t, err := Profile(name)
	if err != nil {
		panic(err)
	}
	return t
}

// Validate reports every problem of the timing: each value must be set, the election timeout
// at least the heartbeat timeout, the lease at most the heartbeat timeout (hashicorp/raft refuses
// the others).
func (t Timing) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"heartbeat timeout", t.HeartbeatTimeout}, {"election timeout", t.ElectionTimeout}, {"leader lease timeout", t.LeaderLeaseTimeout}, {"commit timeout", t.CommitTimeout}} {
		if f.d <= 0 {
			errs = append(errs, fmt.Errorf("raft %s %s: must be positive", f.name, f.d))
		}
	}
	if t.HeartbeatTimeout > 0 && t.ElectionTimeout > 0 && t.ElectionTimeout < t.HeartbeatTimeout {
		errs = append(errs, fmt.Errorf("raft election timeout %s: must be at least the heartbeat timeout %s", t.ElectionTimeout, t.HeartbeatTimeout))
	}
	if t.HeartbeatTimeout > 0 && t.LeaderLeaseTimeout > t.HeartbeatTimeout {
		errs = append(errs, fmt.Errorf("raft leader lease timeout %s: must be at most the heartbeat timeout %s", t.LeaderLeaseTimeout, t.HeartbeatTimeout))
	}
	return errors.Join(errs...)
}

// Adjusted raises the election timeout to the heartbeat timeout and lowers the lease to it, as
// hashicorp/raft requires: after an operator shortened or lengthened the heartbeat timeout
// alone, the profile's other values follow it.
func (t Timing) Adjusted() Timing {
	t.ElectionTimeout = max(t.ElectionTimeout, t.HeartbeatTimeout)
	t.LeaderLeaseTimeout = min(t.LeaderLeaseTimeout, t.HeartbeatTimeout)
	return t
}
