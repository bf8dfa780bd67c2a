package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/node"
	"github.com/palaver-chat/palaver/raft"
	"github.com/palaver-chat/palaver/raft/trust"
	"github.com/palaver-chat/palaver/testcluster/nodetest"
	"github.com/palaver-chat/palaver/testcluster/poll"
)

// opCluster is a three-node cluster whose data directories and configurations a test knows.
type opCluster struct {
	nodes  []*node.Node
	dirs   []string
	mutate []func(*node.Config)
	secret string // the secret file, written ahead
}

// operatorCluster starts three clustered nodes sharing a secret file written ahead.
func operatorCluster(t *testing.T) *opCluster {
	t.Helper()
	c := &opCluster{secret: filepath.Join(t.TempDir(), "cluster.secret")}
	secret, err := trust.Generate()
	if err != nil {
		t.Fatal(err)
	}
	if err := secret.Save(c.secret); err != nil {
		t.Fatal(err)
	}
	var join []string
	for _, name := range []string{"node-a", "node-b", "node-c"} {
		seeds := join
		mutate := func(cfg *node.Config) {
			cfg.NodeName, cfg.ServerName = name+".op.test", "op.test"
			cfg.GossipAddr, cfg.ClusterAddr = "127.0.0.1:0", "127.0.0.1:0"
			cfg.Join, cfg.ClusterSecret = seeds, c.secret
			cfg.DeadNodeGrace = time.Hour // only the operator removes nodes here
		}
		dir := t.TempDir()
		n := nodetest.StartIn(t, dir, mutate)
		c.nodes, c.dirs, c.mutate = append(c.nodes, n), append(c.dirs, dir), append(c.mutate, mutate)
		if join == nil {
			join = []string{n.GossipAddr()}
		}
	}
	poll.Within(t, nodetest.StartTimeout, "three live voters", func() bool { return aliveVoters(c.nodes[0]) == 3 })
	return c
}

func aliveVoters(n *node.Node) int {
	voters := 0
	for _, m := range n.RaftMembers() {
		if m.Suffrage == raft.Voter && m.State == raft.MemberAlive {
			voters++
		}
	}
	return voters
}

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := run(ctx, args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestClusterOperatorCommands runs status, members, transfer-leadership and remove against a live
// three-node cluster over its cluster listeners, and the refusals without credentials.
func TestClusterOperatorCommands(t *testing.T) {
	c := operatorCluster(t)
	nodes, secretPath := c.nodes, c.secret
	addr := nodes[1].ClusterAddr()

	otherPath := filepath.Join(t.TempDir(), "other.secret")
	other, _ := trust.Generate()
	if err := other.Save(otherPath); err != nil {
		t.Fatal(err)
	}
	refusals := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no credentials", []string{"cluster", "status", "--addr", addr}, 2, "refused: no credentials"},
		{"another cluster's secret", []string{"cluster", "status", "--addr", addr, "--cluster-secret", otherPath}, 1, "refused the operator credentials"},
		{"a missing file", []string{"cluster", "status", "--addr", addr, "--cluster-secret", otherPath + ".gone"}, 1, "no usable credentials"},
		{"remove without a node", []string{"cluster", "remove", "--addr", addr, "--cluster-secret", secretPath}, 2, "Usage"},
		{"remove a live node", []string{"cluster", "remove", "--addr", addr, "--cluster-secret", secretPath, "node-c.op.test"}, 1, "alive in gossip"},
		{"remove a stranger", []string{"cluster", "remove", "--addr", addr, "--cluster-secret", secretPath, "node-z"}, 1, "not a server"},
		{"transfer to a stranger", []string{"cluster", "transfer-leadership", "--addr", addr, "--cluster-secret", secretPath, "node-z"}, 1, "not a voter"},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d (want %d), stderr %q lacks %q; stdout %q", code, tt.code, stderr, tt.want, stdout)
			}
		})
	}

	// A node's disk holds its credentials (gossip keys and CA certificates, no CA key): they do not
	// open the operator plane, so a stolen disk cannot back up another node with its keys.
	t.Run("a node's credentials", func(t *testing.T) {
		creds, err := trust.LoadCredentials(filepath.Join(c.dirs[0], "cluster", "node"))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if client, err := raft.DialOperator(ctx, addr, creds.Trust); !errors.Is(err, raft.ErrOperatorRefused) {
			if client != nil {
				client.Close()
			}
			t.Fatalf("the operator plane took a node's credentials: %v", err)
		}
	})

	t.Run("status --json", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "cluster", "status", "--addr", addr, "--cluster-secret", secretPath, "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var st raft.ClusterStatus
		if err := json.Unmarshal([]byte(stdout), &st); err != nil {
			t.Fatalf("%v in %s", err, stdout)
		}
		if st.AskedNode != "node-b.op.test" || st.Leader == "" || st.Voters != 3 || len(st.Nodes) != 3 {
			t.Fatalf("status: %+v", st)
		}
		leaders := 0
		for _, n := range st.Nodes {
			if n.Role == "leader" {
				leaders++
			}
			if n.Suffrage != "voter" || n.Gossip != "alive" || n.AppliedIndex == 0 || n.Version != version ||
				n.ClusterAddr == "" || n.ExchangeBehind < 0 || n.Error != "" {
				t.Errorf("node report %+v", n)
			}
		}
		if leaders != 1 {
			t.Errorf("%d leaders in %+v", leaders, st.Nodes)
		}
	})

	t.Run("status table", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "cluster", "status", "--addr", addr, "--cluster-secret", secretPath)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		for _, want := range []string{"voters alive 3/3 (quorum ok)", "NODE", "LAST CONTACT", "BEHIND", "node-a.op.test", "node-c.op.test", "leader", version} {
			if !strings.Contains(stdout, want) {
				t.Errorf("table lacks %q:\n%s", want, stdout)
			}
		}
	})

	t.Run("members", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "cluster", "members", "--addr", nodes[0].ClusterAddr(), "--cluster-secret", secretPath)
		if code != 0 || strings.Count(stdout, " voter ") != 3 || !strings.Contains(stdout, "SUFFRAGE") {
			t.Fatalf("exit %d, stdout:\n%s\nstderr %s", code, stdout, stderr)
		}
	})

	t.Run("transfer-leadership", func(t *testing.T) {
		leader := nodes[0].RaftStatus().LeaderID
		var target string
		for _, n := range nodes {
			if name := n.RaftStatus().NodeID; name != leader {
				target = name
				break
			}
		}
		// Asked of a node that is not the leader: forwarded to it.
		var asked string
		for _, n := range nodes {
			if id := n.RaftStatus().NodeID; id != leader && id != target {
				asked = n.ClusterAddr()
			}
		}
		code, stdout, stderr := runCLI(t, "cluster", "transfer-leadership", "--addr", asked, "--cluster-secret", secretPath, target)
		if code != 0 || !strings.Contains(stdout, target) {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
		poll.Within(t, time.Minute, "every node follows "+target, func() bool {
			for _, n := range nodes {
				if n.RaftStatus().LeaderID != target {
					return false
				}
			}
			return true
		})
		code, stdout, stderr = runCLI(t, "cluster", "transfer-leadership", "--addr", asked, "--cluster-secret", secretPath, "--json")
		var out map[string]string
		if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil || out["leader"] == "" || out["leader"] == target {
			t.Fatalf("transfer to any voter: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
	})

	t.Run("remove a dead node", func(t *testing.T) {
		// Stop a follower; once gossip sees it dead, remove it by hand (the grace is an hour).
		// The leader is the survivor (the transfers above may have left an election in flight).
		var victim, survivor *node.Node
		poll.Within(t, time.Minute, "a leader every node follows", func() bool {
			victim, survivor = nil, nil
			leader := nodes[0].RaftStatus().LeaderID
			for _, n := range nodes {
				st := n.RaftStatus()
				switch {
				case leader == "" || st.LeaderID != leader:
					return false
				case st.NodeID == leader:
					survivor = n
				case victim == nil:
					victim = n
				}
			}
			return survivor != nil && victim != nil
		})
		name := victim.RaftStatus().NodeID
		victim.Close()
		poll.Within(t, time.Minute, name+" dead in gossip", func() bool {
			for _, m := range survivor.RaftMembers() {
				if m.NodeID == name {
					return m.State == raft.MemberDead
				}
			}
			return false
		})
		code, stdout, stderr := runCLI(t, "cluster", "remove", "--addr", survivor.ClusterAddr(), "--cluster-secret", secretPath, name)
		if code != 0 || !strings.Contains(stdout, "removed "+name) {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
		if st := survivor.RaftStatus(); st.Voters != 2 {
			t.Fatalf("%d voters after the removal, want 2", st.Voters)
		}
		code, stdout, _ = runCLI(t, "cluster", "status", "--addr", survivor.ClusterAddr(), "--cluster-secret", secretPath, "--json")
		var st raft.ClusterStatus
		if code != 0 || json.Unmarshal([]byte(stdout), &st) != nil {
			t.Fatalf("status after removal: exit %d %s", code, stdout)
		}
		for _, n := range st.Nodes {
			if n.Node == name && (n.Suffrage != "none" || n.Role != "unreachable") {
				t.Fatalf("removed node still listed as %+v", n)
			}
		}
	})
}
