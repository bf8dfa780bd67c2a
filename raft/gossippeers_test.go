package raft

import (
	"slices"
	"testing"
)

func TestSeedsFor(t *testing.T) {
	cases := []struct {
		name        string
		join, saved []string
		hasState    bool
		want        []string
	}{
		{"fresh node: the configured seeds only", []string{"a:1"}, []string{"b:1"}, false, []string{"a:1"}},
		{"restart: configured then saved, no repeats", []string{"a:1"}, []string{"a:1", "b:1"}, true, []string{"a:1", "b:1"}},
		{"restart without --join: the saved members", nil, []string{"b:1", "c:1"}, true, []string{"b:1", "c:1"}},
		{"nothing known", nil, nil, true, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := seedsFor(tc.join, tc.saved, tc.hasState); !slices.Equal(got, tc.want) {
				t.Fatalf("seedsFor = %q, want %q", got, tc.want)
			}
		})
	}
}

// The node that bootstrapped the cluster has no --join. Restarted from its data it still finds
// the others, through the members it saved, instead of waiting for them to gossip to it.
func TestRestartedBootstrapNodeRejoinsThroughSavedPeers(t *testing.T) {
	c := startCluster(t, 3, withPersistence())
	first := c.node("n1")
	others := []string{c.node("n2").store.GossipAddr(), c.node("n3").store.GossipAddr()}
	slices.Sort(others)
	waitFor(t, "n1 saves the other members' gossip addresses", func() bool {
		saved, err := loadGossipPeers(first.cfg.Dir)
		return err == nil && slices.Equal(saved, others)
	})
	if len(first.cfg.Join) != 0 {
		t.Fatalf("n1 was started with Join %q; the test needs the bootstrap node", first.cfg.Join)
	}
	c.kill("n1")
	back := c.restart("n1")
	for _, addr := range others {
		if !slices.Contains(back.store.seeds, addr) {
			t.Fatalf("restarted n1 seeds %q lack %s", back.store.seeds, addr)
		}
	}
	waitFor(t, "restarted n1 sees n2 and n3 alive", func() bool {
		alive := 0
		for _, m := range back.store.Members() {
			if !m.Self && m.State == MemberAlive {
				alive++
			}
		}
		return alive == 2
	})
}
