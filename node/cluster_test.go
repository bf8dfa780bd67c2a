package node

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/raft"
	"github.com/palaver-chat/palaver/raft/trust"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// startCluster starts three real nodes on loopback: the first bootstraps, the others join it.
func startCluster(t *testing.T) []*Node {
	t.Helper()
	return startNamedCluster(t, "test", nil)
}

// startNamedCluster starts nodes node-a.<domain>, node-b.<domain> and node-c.<domain>, each
// configured by extra (when set) before it is made clustered, and waits for three live voters.
func startNamedCluster(t *testing.T, domain string, extra func(*Config)) []*Node {
	t.Helper()
	clustered := func(name string, join []string) func(*Config) {
		return func(c *Config) {
			if extra != nil {
				extra(c)
			}
			c.NodeName = name + "." + domain
			c.GossipAddr, c.ClusterAddr = "127.0.0.1:0", "127.0.0.1:0"
			c.Join = join
		}
	}
	a := startNode(t, t.TempDir(), clustered("node-a", nil))
	nodes := []*Node{a}
	for _, name := range []string{"node-b", "node-c"} {
		joining := clustered(name, []string{a.GossipAddr()})
		nodes = append(nodes, startNode(t, t.TempDir(), func(c *Config) { joining(c); c.ClusterSecret = secretOf(a) }))
	}
	eventually(t, "three voters", func() bool { return liveVoters(a) == 3 })
	return nodes
}

// liveVoters counts the voters n sees alive.
func liveVoters(n *Node) int {
	voters := 0
	for _, m := range n.raft.Members() {
		if m.Suffrage == raft.Voter && m.State == raft.MemberAlive {
			voters++
		}
	}
	return voters
}

// chatAcross logs alice in on from and bob on to, has both join channel and alice say text
// there, which bob must receive; it returns both clients.
func chatAcross(t *testing.T, from, to *Node, channel, text string) (alice, bob *ircclient.Client) {
	t.Helper()
	alice, _ = login(t, from, "alice")
	bob, _ = login(t, to, "bob")
	bob.Send("JOIN " + channel)
	expect(t, bob, "366", channel)
	alice.Send("JOIN " + channel)
	expect(t, alice, "366", channel)
	alice.Send("PRIVMSG " + channel + " :" + text)
	expect(t, bob, "PRIVMSG", text)
	return alice, bob
}

// secretOf is the cluster secret file a first node created in its data directory.
func secretOf(n *Node) string { return filepath.Join(n.cfg.DataDir, clusterSecretFile) }

func TestBadClusterStartsFailClearly(t *testing.T) {
	ctx := testCtx(t)
	base := func(dir string) Config {
		cfg := LoopbackConfig(dir)
		cfg.GossipAddr, cfg.ClusterAddr, cfg.NoFloodLimits = "127.0.0.1:0", "127.0.0.1:0", false
		return cfg
	}
	t.Run("join address where nobody listens", func(t *testing.T) {
		cfg := base(t.TempDir())
		cfg.NodeName, cfg.Join = "lonely", []string{"127.0.0.1:1"}
		secret, err := trust.Generate()
		if err != nil {
			t.Fatal(err)
		}
		cfg.ClusterSecret = filepath.Join(t.TempDir(), "secret")
		if err := secret.Save(cfg.ClusterSecret); err != nil {
			t.Fatal(err)
		}
		if n, err := Start(ctx, cfg, nil); err == nil || !strings.Contains(err.Error(), "join") {
			if n != nil {
				n.Close()
			}
			t.Fatalf("a node joined nothing: %v", err)
		}
	})
	t.Run("join without the cluster secret", func(t *testing.T) {
		cfg := base(t.TempDir())
		cfg.NodeName, cfg.Join = "secretless", []string{"127.0.0.1:1"}
		if n, err := Start(ctx, cfg, nil); err == nil || !strings.Contains(err.Error(), "--cluster-secret") {
			if n != nil {
				n.Close()
			}
			t.Fatalf("join without a secret: %v", err)
		}
	})
	t.Run("duplicate node name", func(t *testing.T) {
		first := startNode(t, t.TempDir(), func(c *Config) {
			c.NodeName, c.GossipAddr, c.ClusterAddr = "twin", "127.0.0.1:0", "127.0.0.1:0"
		})
		cfg := base(t.TempDir())
		cfg.NodeName, cfg.Join, cfg.ClusterSecret = "twin", []string{first.GossipAddr()}, secretOf(first)
		if n, err := Start(ctx, cfg, nil); err == nil {
			n.Close()
			t.Fatal("a second node named twin joined")
		}
	})
	t.Run("invalid flags", func(t *testing.T) {
		cfg := base(t.TempDir())
		cfg.Join, cfg.GossipAddr = []string{"127.0.0.1:1"}, ""
		if _, err := Start(ctx, cfg, nil); err == nil || !strings.Contains(err.Error(), "--gossip-addr") {
			t.Fatalf("join without gossip: %v", err)
		}
		cfg = base(t.TempDir())
		cfg.MaxVoters = 4
		if _, err := Start(ctx, cfg, nil); err == nil || !strings.Contains(err.Error(), "max voters") {
			t.Fatalf("four voters: %v", err)
		}
	})
}
