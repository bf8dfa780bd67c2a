package raft

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	hraft "github.com/hashicorp/raft"
)

func TestMinServerLevel(t *testing.T) {
	servers := func(ids ...string) []hraft.Server {
		var out []hraft.Server
		for _, id := range ids {
			out = append(out, hraft.Server{ID: hraft.ServerID(id), Suffrage: hraft.Voter})
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		servers  []hraft.Server
		own      int
		gossiped map[string]int // absent: never seen in gossip
		want     int
	}{
		{"alone", servers("n1"), 1, nil, 1},
		{"alone at level 0", servers("n1"), 0, nil, 0},
		{"all upgraded", servers("n1", "n2", "n3"), 1, map[string]int{"n2": 1, "n3": 1}, 1},
		{"one old node gossips no level", servers("n1", "n2", "n3"), 1, map[string]int{"n2": 1, "n3": 0}, 0},
		{"a server not seen in gossip counts as 0", servers("n1", "n2", "n3"), 1, map[string]int{"n2": 1}, 0},
		{"a member outside the configuration does not count", servers("n1", "n2"), 1, map[string]int{"n2": 1, "n9": 0}, 1},
		{"this node below the others", servers("n1", "n2"), 0, map[string]int{"n2": 1}, 0},
		{"mixed newer levels", servers("n1", "n2", "n3"), 2, map[string]int{"n2": 3, "n3": 1}, 1},
		{"non-voters count", append(servers("n1"), hraft.Server{ID: "n4", Suffrage: hraft.Nonvoter}), 1, map[string]int{"n4": 0}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := minServerLevel(tc.servers, "n1", tc.own, func(node string) (int, bool) {
				l, ok := tc.gossiped[node]
				return l, ok
			})
			if got != tc.want {
				t.Errorf("minServerLevel = %d, want %d", got, tc.want)
			}
		})
	}
}

// newEntryLevel is the test clusters' EntryLevel: an entry whose payload starts with "new:" needs
// level 1.
func newEntryLevel(data []byte) int {
	if _, payload, _ := strings.Cut(string(data), "|"); strings.HasPrefix(payload, "new:") {
		return 1
	}
	return 0
}

// TestProposeWaitsForUpgradedServers: while one server gossips no feature level (an earlier
// version), an entry of level 1 is refused with ErrClusterUpgrading on the leader, on a follower
// and at the leader for a forwarded one, and nothing is applied; entries of level 0 go on. Once
// that server restarts at level 1, the same entry is accepted.
func TestProposeWaitsForUpgradedServers(t *testing.T) {
	c := startCluster(t, 3, withPersistence(), withLevels(map[string]int{"n1": 1, "n2": 1}, newEntryLevel))
	leader := c.waitLeader()
	var follower *testNode
	for _, n := range c.live() {
		if n.id != leader.id && n.id != "n3" {
			follower = n
		}
	}
	if follower == nil { // n3 leads: both others are followers
		follower = c.node("n1")
		if leader.id == "n1" {
			follower = c.node("n2")
		}
	}
	c.propose(follower.id, "r0", "old entry")

	for _, n := range []*testNode{leader, follower} {
		if n.id == "n3" {
			continue
		}
		_, _, err := n.store.Propose(testContext(t), []byte("r1|new:feature"))
		if !errors.Is(err, ErrClusterUpgrading) {
			t.Fatalf("Propose of a level-1 entry on %s with n3 at level 0: err = %v, want ErrClusterUpgrading", n.id, err)
		}
	}
	if leader.id != "n3" {
		resp := leader.store.handlePropose(testContext(t), []byte("r2|new:forwarded"))
		if resp.Code != codeUpgrading {
			t.Fatalf("a forwarded level-1 entry at the leader: %+v, want code %q", resp, codeUpgrading)
		}
		if err := responseError(opPropose, resp); !errors.Is(err, ErrClusterUpgrading) {
			t.Fatalf("the follower reads %v, want ErrClusterUpgrading", err)
		}
	}
	c.propose(follower.id, "r3", "old entry again")
	for _, item := range c.waitConverged() {
		if strings.HasPrefix(item, "new:") {
			t.Fatalf("a refused entry was applied: %q", item)
		}
	}

	c.upgrade("n3")
	waitFor(t, "every node sees the cluster at level 1", func() bool {
		return len(c.live()) == 3 && !slices.ContainsFunc(c.live(), func(n *testNode) bool { return n.store.ClusterLevel() != 1 })
	})
	c.waitLeader()
	c.propose(follower.id, "r4", "new:feature")
	items := c.waitConverged()
	if countOf(items, "new:feature") != 1 {
		t.Fatalf("items after the upgrade = %q, want new:feature once", items)
	}
}

// upgrade restarts node id on its data directory at feature level 1.
func (c *testCluster) upgrade(id string) {
	c.t.Helper()
	c.kill(id)
	c.node(id).cfg.FeatureLevel = 1
	c.restart(id)
}

// gatedPins is a NodeKeys whose pins are entries of level 1: PinNodeKey proposes through the
// leader's gate first, as the node layer's does through Propose.
type gatedPins struct {
	sharedPins
	mu   sync.Mutex
	gate func() error
}

func (p *gatedPins) PinNodeKey(ctx context.Context, node string, sum []byte) error {
	p.mu.Lock()
	gate := p.gate
	p.mu.Unlock()
	if gate != nil {
		if err := gate(); err != nil {
			return err
		}
	}
	return p.sharedPins.PinNodeKey(ctx, node, sum)
}

// TestPinsWaitForUpgradedServers: the leader pins no key while a server is at level 0 (and logs
// no warning for it), and pins every server once all are upgraded. n3 runs the earlier version.
func TestPinsWaitForUpgradedServers(t *testing.T) {
	pins := &gatedPins{sharedPins: sharedPins{pins: map[string][]byte{}}}
	rec := newRecordingHandler(slog.LevelWarn)
	c := newTestCluster(t, withPersistence(), withNodeKeys(pins), withLogger(slog.New(rec)),
		withLevels(map[string]int{"n1": 1, "n2": 1}, newEntryLevel))
	pins.mu.Lock()
	pins.gate = func() error {
		leader := c.leader()
		if leader == nil {
			return errors.New("no leader")
		}
		return leader.store.admit([]byte("pin|new:pin"))
	}
	pins.mu.Unlock()
	c.start("n1")
	c.waitLeader()
	c.start("n2", c.node("n1").store.GossipAddr())
	c.start("n3", c.node("n1").store.GossipAddr())
	c.waitConfigured(3)
	leader := c.waitLeader()
	passes := leader.store.hooks.reconcilePasses.Load()
	waitFor(t, "five more reconcile passes", func() bool { return leader.store.hooks.reconcilePasses.Load() >= passes+5 })
	// n1 and n2 may have been pinned before n3 joined; n3 joined, nothing more is pinned.
	if _, ok := pins.NodeKey("n3"); ok {
		t.Fatalf("n3 pinned while it runs level 0")
	}
	if warned := rec.find("pinning a node's key"); len(warned) != 0 {
		t.Fatalf("warned while waiting for the upgrade: %+v", warned)
	}

	c.upgrade("n3")
	waitFor(t, "three nodes pinned after the upgrade", func() bool {
		for _, n := range c.live() {
			if !pins.is(n.id, n.cfg.Identity.KeySum()) {
				return false
			}
		}
		return len(c.live()) == 3
	})
}
