package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/raft"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
	"github.com/palaver-chat/palaver/testcluster/nodetest"
	"github.com/palaver-chat/palaver/testcluster/poll"
)

// history is the msgids of a public channel's messages on n, oldest first (REST, anonymous).
func history(t *testing.T, n *node.Node, channel string) []string {
	t.Helper()
	resp, err := http.Get("http://" + n.HTTPAddr() + "/api/v1/channels/" + channel + "/history?limit=100")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil
	}
	var msgs []struct {
		MsgID string `json:"msgid"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&msgs); err != nil {
		t.Fatalf("history on %s: %v", n.HTTPAddr(), err)
	}
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.MsgID
	}
	return ids
}

// say sends count messages to #ops from a client on n, each acknowledged by its echo.
func say(t *testing.T, ctx context.Context, cl *ircclient.Client, from string, count int) {
	t.Helper()
	for i := range count {
		text := fmt.Sprintf("%s %d", from, i)
		if err := cl.Sendf("PRIVMSG #ops :%s", text); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Expect(ctx, func(m ircmsg.Message) bool { return m.Command == "PRIVMSG" && m.Param(1) == text }); err != nil {
			t.Fatalf("echo of %q: %v", text, err)
		}
	}
}

// waitHistory waits until every node serves want as #ops's history.
func waitHistory(t *testing.T, nodes []*node.Node, want []string) {
	t.Helper()
	poll.Within(t, time.Minute, fmt.Sprintf("%d messages on every node", len(want)), func() bool {
		for _, n := range nodes {
			if !slices.Equal(history(t, n, "ops"), want) {
				return false
			}
		}
		return true
	})
}

// TestBackupRestore: traffic, a backup of one node, more traffic, the node's data wiped and
// restored from the archive (without keys: it is removed first, and enrols again); it returns
// into the cluster with the same state hash and the same history as its peers, the messages
// after the backup caught up from them. Then the whole cluster is restored from the archive as a
// new one-node cluster, with the messages up to the backup.
func TestBackupRestore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := operatorCluster(t)
	a, b := c.nodes[0], c.nodes[1]

	cl, err := ircclient.Dial(ctx, a.IRCAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.Register(ctx, "alice", "echo-message"); err != nil {
		t.Fatal(err)
	}
	cl.Send("JOIN #ops")
	if _, err := cl.ExpectCommand(ctx, "JOIN"); err != nil {
		t.Fatal(err)
	}
	say(t, ctx, cl, "before", 5)
	before := history(t, a, "ops")
	if len(before) != 5 {
		t.Fatalf("history on the origin: %v", before)
	}
	waitHistory(t, c.nodes, before)

	archive := filepath.Join(t.TempDir(), "b.backup")
	code, stdout, stderr := runCLI(t, "backup", "--addr", b.ClusterAddr(), "--cluster-secret", c.secret, "--out", archive)
	if code != 0 || !strings.Contains(stdout, "wrote "+archive) {
		t.Fatalf("backup: exit %d, %s %s", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(t, "backup", "--addr", b.ClusterAddr(), "--cluster-secret", c.secret, "--out", archive); code != 1 || !strings.Contains(stderr, "exists") {
		t.Fatalf("a second backup over the first: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "backup", "--addr", b.ClusterAddr(), "--out", archive+".2"); code != 2 || !strings.Contains(stderr, "refused: no credentials") {
		t.Fatalf("backup without credentials: exit %d, %s", code, stderr)
	}

	say(t, ctx, cl, "after", 5)
	all := history(t, a, "ops")
	if len(all) != 10 {
		t.Fatalf("history on the origin: %v", all)
	}
	waitHistory(t, c.nodes, all)

	// The archive is checked before anything is written.
	t.Run("refusals", func(t *testing.T) {
		data, err := os.ReadFile(archive)
		if err != nil {
			t.Fatal(err)
		}
		corrupt := filepath.Join(t.TempDir(), "corrupt")
		flipped := slices.Clone(data)
		flipped[len(flipped)/2] ^= 0x40
		os.WriteFile(corrupt, flipped, 0o600)
		truncated := filepath.Join(t.TempDir(), "truncated")
		os.WriteFile(truncated, data[:len(data)/2], 0o600)
		full := t.TempDir()
		os.WriteFile(filepath.Join(full, "x"), []byte("x"), 0o600)
		for _, tt := range []struct {
			name string
			args []string
			code int
		}{
			{"corrupt", []string{"restore", "--in", corrupt, "--data-dir", filepath.Join(t.TempDir(), "d")}, 1},
			{"truncated", []string{"restore", "--in", truncated, "--data-dir", filepath.Join(t.TempDir(), "d")}, 1},
			{"a directory in use", []string{"restore", "--in", archive, "--data-dir", full}, 1},
			{"a new cluster without its raft address", []string{"restore", "--in", archive, "--data-dir", t.TempDir(), "--new-cluster"}, 2},
		} {
			if code, stdout, stderr := runCLI(t, tt.args...); code != tt.code {
				t.Errorf("%s: exit %d, want %d: %s %s", tt.name, code, tt.code, stdout, stderr)
			}
		}
	})

	// Node b loses its disk; it comes back from the archive.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(c.dirs[1]); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCLI(t, "restore", "--in", archive, "--data-dir", c.dirs[1])
	if code != 0 || !strings.Contains(stdout, "restored node node-b.op.test") {
		t.Fatalf("restore: exit %d, %s %s", code, stdout, stderr)
	}
	// It comes back at new ports, once gossip has let its old incarnation go.
	poll.Within(t, time.Minute, "node-b dead in gossip", func() bool {
		for _, m := range a.RaftMembers() {
			if m.NodeID == "node-b.op.test" {
				return m.State != raft.MemberAlive
			}
		}
		return true
	})
	// The archive holds no keys: b enrols again with a new key, which is not the one the cluster
	// pinned it to, so its peers refuse it until the operator removes it (unpinning its key).
	if code, stdout, stderr := runCLI(t, "cluster", "remove", "--addr", a.ClusterAddr(), "--cluster-secret", c.secret, "node-b.op.test"); code != 0 {
		t.Fatalf("remove the restored node: exit %d, %s %s", code, stdout, stderr)
	}
	b = nodetest.StartIn(t, c.dirs[1], c.mutate[1])
	c.nodes[1] = b
	waitHistory(t, c.nodes, all)
	poll.Within(t, time.Minute, "the restored node's state equals the leader's", func() bool {
		return b.RaftStatus().AppliedIndex == a.RaftStatus().AppliedIndex && b.Machine().Hash() == a.Machine().Hash()
	})

	// The whole cluster from the same archive: a new cluster of one node, up to the backup.
	dir := t.TempDir()
	raftAddr := freeAddr(t)
	code, stdout, stderr = runCLI(t, "restore", "--in", archive, "--data-dir", dir, "--new-cluster", "--raft-addr", raftAddr)
	if code != 0 {
		t.Fatalf("restore --new-cluster: exit %d, %s %s", code, stdout, stderr)
	}
	// Its message store holds exactly the messages before the backup.
	store, err := eventstore.Open(ctx, eventstore.Options{Path: filepath.Join(dir, "events.db")})
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range all {
		if has, err := store.Has(ctx, id); err != nil || has != (i < len(before)) {
			t.Errorf("restored store has message %d (%s): %v, %v", i, id, has, err)
		}
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	solo := nodetest.StartIn(t, dir, func(cfg *node.Config) {
		c.mutate[1](cfg)
		cfg.Join, cfg.RaftAddr = nil, raftAddr
	})
	if st := solo.RaftStatus(); st.Role != "leader" || st.Voters != 1 || st.ClusterID == a.RaftStatus().ClusterID {
		t.Fatalf("restored as a new cluster: %+v", st)
	}
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
