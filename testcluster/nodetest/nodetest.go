package nodetest

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/node"
	"github.com/palaver-chat/palaver/raft"
	"github.com/palaver-chat/palaver/testcluster/poll"
)

// StartTimeout bounds a node's start: a leader elected, the log applied, its key registered.
const StartTimeout = time.Minute

// Start starts a node of node.LoopbackConfig changed by mutate (which may be nil), with its data
// in a fresh temporary directory, and closes it when tb ends.
func Start(tb testing.TB, mutate func(*node.Config)) *node.Node {
	tb.Helper()
	return StartIn(tb, tb.TempDir(), mutate)
}

// StartIn is Start with the data in dir, so a test can stop a node and start it again on the
// same data.
func StartIn(tb testing.TB, dir string, mutate func(*node.Config)) *node.Node {
	tb.Helper()
	cfg := node.LoopbackConfig(dir)
	if mutate != nil {
		mutate(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	n, err := node.Start(ctx, cfg, Logger())
	if err != nil {
		tb.Fatalf("start node: %v", err)
	}
	tb.Cleanup(func() { n.Close() })
	return n
}

// Logger is the log of nodes started for tests: errors only, everything with PALAVER_TEST_LOG set.
func Logger() *slog.Logger {
	level := slog.LevelError
	if os.Getenv("PALAVER_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// StartCluster starts three clustered nodes node-a.<domain>, node-b.<domain> and node-c.<domain>
// of node.LoopbackConfig, each changed by extra (which may be nil) before it is made clustered:
// the first bootstraps and writes the cluster secret, the others join it with that secret. It
// returns once the first node counts three live voters; every node closes when tb ends.
func StartCluster(tb testing.TB, domain string, extra func(*node.Config)) []*node.Node {
	tb.Helper()
	clustered := func(name string, join []string, secret string) func(*node.Config) {
		return func(c *node.Config) {
			if extra != nil {
				extra(c)
			}
			c.NodeName = name + "." + domain
			c.GossipAddr, c.ClusterAddr = "127.0.0.1:0", "127.0.0.1:0"
			c.Join, c.ClusterSecret = join, secret
		}
	}
	dirA := tb.TempDir()
	a := StartIn(tb, dirA, clustered("node-a", nil, ""))
	nodes := []*node.Node{a}
	secret := filepath.Join(dirA, "cluster", "secret")
	for _, name := range []string{"node-b", "node-c"} {
		nodes = append(nodes, Start(tb, clustered(name, []string{a.GossipAddr()}, secret)))
	}
	poll.Within(tb, StartTimeout, "three live voters", func() bool {
		voters := 0
		for _, m := range a.RaftMembers() {
			if m.Suffrage == raft.Voter && m.State == raft.MemberAlive {
				voters++
			}
		}
		return voters == 3
	})
	return nodes
}
