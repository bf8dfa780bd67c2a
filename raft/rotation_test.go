package raft

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/raft/trust"
)

// TestSecretRotationRollingRestart rotates the cluster secret of a three-node TCP cluster the
// way docs/cluster.md says: every node restarted in turn with the rotated file, then in turn with the
// retired one. After every single restart, with nodes holding different files side by side, the
// nodes agree on a leader, every node's proposal commits (forwarded over the cluster RPC) and
// gossip sees every member alive; once all hold the rotated file, gossip has moved to the new key.
func TestSecretRotationRollingRestart(t *testing.T) {
	old, err := trust.Generate()
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := old.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	retired := rotated.Retire()
	type member struct {
		cfg Config
		sm  *dedupMachine
		s   *Store
	}
	nodes := make([]*member, 3)
	open := func(i int, secret *trust.Secret) {
		t.Helper()
		n := nodes[i]
		id, err := trust.NewIdentity(secret, n.cfg.NodeID)
		if err != nil {
			t.Fatal(err)
		}
		n.cfg.Identity = id
		n.sm = newDedupMachine()
		s, err := Open(testContext(t), n.cfg, n.sm)
		if err != nil {
			t.Fatalf("Open %s: %v", n.cfg.NodeID, err)
		}
		n.s = s
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			if n != nil && n.s != nil {
				n.s.Close()
			}
		}
	})
	for i := range nodes {
		cfg := fastConfig(fmt.Sprintf("rot%d", i+1), t.TempDir())
		cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = 200*time.Millisecond, 200*time.Millisecond, 100*time.Millisecond
		cfg.GossipAddr, cfg.ClusterAddr = "127.0.0.1:0", "127.0.0.1:0"
		cfg.Logger = testLogger()
		if i > 0 {
			cfg.Bootstrap = false
			cfg.Join = []string{nodes[0].s.GossipAddr()}
		}
		nodes[i] = &member{cfg: cfg}
		open(i, old)
		// Later starts reuse the addresses the stored configuration points at.
		nodes[i].cfg.BindAddr, nodes[i].cfg.GossipAddr, nodes[i].cfg.ClusterAddr = nodes[i].s.Addr(), nodes[i].s.GossipAddr(), nodes[i].s.ClusterAddr()
	}
	round := 0
	check := func(step string) {
		t.Helper()
		waitFor(t, step+": a leader all agree on, every member alive in gossip", func() bool {
			var leader string
			for _, n := range nodes {
				st := n.s.Status()
				if st.LeaderID == "" || (leader != "" && st.LeaderID != leader) || n.s.gossip.aliveOthers() != 2 {
					return false
				}
				leader = st.LeaderID
			}
			return true
		})
		round++
		for i, n := range nodes {
			if _, _, err := n.s.Propose(testContext(t), fmt.Appendf(nil, "rid-%d-%d|r%d-%d", round, i, round, i)); err != nil {
				t.Fatalf("%s: propose on %s: %v", step, n.cfg.NodeID, err)
			}
		}
	}
	restart := func(i int, secret *trust.Secret, step string) {
		t.Helper()
		if err := nodes[i].s.Close(); err != nil {
			t.Fatal(err)
		}
		nodes[i].cfg.Join = []string{nodes[(i+1)%3].cfg.GossipAddr}
		open(i, secret)
		check(step)
	}
	check("all on the old secret")
	for i := range nodes {
		restart(i, rotated, fmt.Sprintf("rot%d on the rotated secret", i+1))
	}
	waitFor(t, "gossip on the new key everywhere", func() bool {
		for _, n := range nodes {
			if !bytes.Equal(n.s.gossip.keyring.GetPrimaryKey(), rotated.GossipKeys[0]) {
				return false
			}
		}
		return true
	})
	for i := range nodes {
		restart(i, retired, fmt.Sprintf("rot%d on the retired secret", i+1))
	}
	for _, n := range nodes {
		if _, err := n.s.ReadIndex(testContext(t)); err != nil {
			t.Fatal(err)
		}
		if got := len(n.sm.items()); got != 3*round {
			t.Fatalf("%s holds %d entries, want %d", n.cfg.NodeID, got, 3*round)
		}
	}
}
