package node

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/raft"
	"github.com/palaver-chat/palaver/raft/trust"
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
	eventually(t, "three voters", func() bool {
		voters := 0
		for _, m := range a.raft.Members() {
			if m.Suffrage == raft.Voter && m.State == raft.MemberAlive {
				voters++
			}
		}
		return voters == 3
	})
	return nodes
}

// secretOf is the cluster secret file a first node created in its data directory.
func secretOf(n *Node) string { return filepath.Join(n.cfg.DataDir, clusterSecretFile) }

func TestThreeNodesShareChannelsAndMessages(t *testing.T) {
	nodes := startCluster(t)
	a, b, c := nodes[0], nodes[1], nodes[2]
	caps := []string{"message-tags", "echo-message"}
	alice, res := login(t, a, "alice", caps...)
	bob := dial(t, b)
	if _, err := bob.Register(testCtx(t), "bob", caps...); err != nil {
		t.Fatal(err)
	}
	alice.Send("JOIN #everywhere")
	expect(t, alice, "366", "#everywhere")
	bob.Send("JOIN #everywhere")
	expect(t, bob, "353", "alice", "bob") // members on every node
	expect(t, alice, "JOIN", "#everywhere")

	alice.Send("PRIVMSG #everywhere :hello from node a")
	fromA := expect(t, bob, "PRIVMSG", "hello from node a")
	bob.Send("PRIVMSG #everywhere :hello from node b")
	expect(t, alice, "PRIVMSG", "hello from node b")

	// A third node serves the same history and verifies a message another node signed.
	url := "http://" + c.HTTPAddr() + "/api/v1/channels/everywhere/history"
	eventually(t, "history on node c", func() bool {
		resp, body := httpDo(t, "GET", url, "", nil)
		return resp.StatusCode == 200 && strings.Contains(string(body), "hello from node a") && strings.Contains(string(body), "hello from node b")
	})
	resp, body := httpDo(t, "GET", "http://"+c.HTTPAddr()+"/api/v1/verify/"+fromA.Tags["msgid"], "", nil)
	var v struct {
		Verdict   string `json:"verdict"`
		KeySource string `json:"key_source"`
	}
	if err := json.Unmarshal(body, &v); err != nil || resp.StatusCode != http.StatusOK || v.Verdict != "valid" || v.KeySource != "server-key" {
		t.Fatalf("verify on node c = %d %s (author %s)", resp.StatusCode, body, res.DID)
	}
	// A strong read on node c sees a topic set on node a at once; a bad consistency value is refused.
	alice.Send("TOPIC #everywhere :set on a")
	expect(t, alice, "TOPIC", "set on a")
	resp, body = httpDo(t, "GET", "http://"+c.HTTPAddr()+"/api/v1/channels/everywhere/topic?consistency=strong", "", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "set on a") {
		t.Fatalf("strong topic read on node c = %d %s", resp.StatusCode, body)
	}
	if resp, _ := httpDo(t, "GET", "http://"+c.HTTPAddr()+"/api/v1/channels?consistency=eventual", "", nil); resp.StatusCode != 400 {
		t.Fatalf("consistency=eventual = %d, want 400", resp.StatusCode)
	}
	// A delete made on node b reaches node a and node c: gone from history everywhere.
	bobGuest := bob // bob is a guest: his own delete needs no signature
	bobGuest.Send("PRIVMSG #everywhere :oops from b")
	oops := expect(t, alice, "PRIVMSG", "oops from b").Tags["msgid"]
	bobGuest.Send("@+draft/delete=" + oops + " TAGMSG #everywhere")
	del := expect(t, alice, "TAGMSG", "#everywhere")
	if del.Tags["+draft/delete"] != oops {
		t.Fatalf("delete relayed to node a as %s", del.String())
	}
	for _, nd := range []*Node{a, c} {
		eventually(t, "the delete stored on "+nd.cfg.NodeName, func() bool {
			m, err := nd.events.Get(testCtx(t), oops)
			return err == nil && !m.DeletedAt.IsZero()
		})
		_, body := httpDo(t, "GET", "http://"+nd.HTTPAddr()+"/api/v1/channels/everywhere/history", "", nil)
		if strings.Contains(string(body), "oops from b") {
			t.Fatalf("deleted message still in %s's history", nd.cfg.NodeName)
		}
	}
	// WHOIS on node c sees alice, who is connected to node a.
	carol, _ := guest(t, c, "carol")
	carol.Send("WHOIS alice")
	expect(t, carol, "330", "alice", res.DID)
}

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
