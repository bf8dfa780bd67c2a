package raft

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/testcluster/poll"
)

func TestFiveNodesKeepThreeVotersAndReplaceADeadOne(t *testing.T) {
	// The grace outlasts the gossip suspicions a loaded CI machine causes (a live node starved of
	// CPU can be marked dead for a moment; with a 500 ms grace CI once saw one removed as well).
	c := startCluster(t, 5, withGrace(3*time.Second))
	leader := c.waitLeader()
	if st := leader.store.Status(); st.Voters != 3 || st.NonVoters != 2 {
		t.Fatalf("5 nodes: leader status %+v, want 3 voters and 2 non-voters", st)
	}
	var victim string
	for _, m := range leader.store.Members() {
		if m.Suffrage == Voter && !m.Leader {
			victim = m.NodeID
			break
		}
	}
	c.kill(victim)

	// A live non-voter takes the dead voter's place, then the dead node is
	// removed once the grace period is over. Gossip must first call the victim
	// dead, then the grace runs out, then five -race nodes change their
	// configuration twice: on a loaded 2-core machine this has taken more than
	// testTimeout, so the bound is three of them (a bound, not a sleep).
	poll.Within(t, 3*testTimeout, victim+" removed and replaced", func() bool {
		l := c.leader()
		if l == nil {
			return false
		}
		members := l.store.Members()
		voters := 0
		for _, m := range members {
			if m.NodeID == victim && m.Suffrage != NotInConfiguration {
				return false
			}
			if m.Suffrage == Voter {
				if m.State != MemberAlive {
					return false
				}
				voters++
			}
		}
		st := l.store.Status()
		return voters == 3 && st.Voters == 3 && st.NonVoters == 1
	})
	// A few more reconcile passes must not remove anyone again. They are counted on every live
	// node: leadership may move on a loaded machine (the tests' heartbeat is 100 ms), and only the
	// leader reconciles.
	passes := func() (n int64) {
		for _, node := range c.live() {
			n += node.store.hooks.reconcilePasses.Load()
		}
		return n
	}
	before := passes()
	waitFor(t, "three more reconcile passes", func() bool { return passes() >= before+3 })
	if got, total := c.removals(victim), c.totalRemovals(); got != 1 || total != 1 {
		t.Fatalf("OnNodeRemoved called %d times for %s and %d in all, want 1 and 1", got, victim, total)
	}
	// Writes still work from every node, through the new voter set.
	for _, n := range c.live() {
		c.propose(n.id, "rid-"+n.id, n.id)
	}
	c.waitConverged()
}

func TestMaxVotersFive(t *testing.T) {
	c := startCluster(t, 5, withMaxVoters(5))
	if st := c.waitLeader().store.Status(); st.Voters != 5 || st.NonVoters != 0 {
		t.Fatalf("MaxVoters 5 with 5 nodes: status %+v, want 5 voters", st)
	}
}

func TestDuplicateNodeNameIsRefused(t *testing.T) {
	c := startCluster(t, 3)
	original := c.node("n2")
	originalGossip := original.store.GossipAddr()

	cfg := c.config("n2", c.node("n1").store.GossipAddr())
	cfg.BindAddr = "n2-impostor"
	cfg.GossipAddr = "127.0.0.2:7946"
	cfg.ClusterAddr = "n2-impostor:cluster"
	s, err := Open(testContext(t), cfg, newDedupMachine())
	if err == nil {
		s.Close()
		t.Fatal("a second live n2 was allowed to join")
	}
	if !errors.Is(err, ErrDuplicateNodeName) {
		t.Fatalf("Open of a duplicate name = %v, want ErrDuplicateNodeName", err)
	}
	// Nothing changed for the original n2.
	c.propose("n2", "rid-still", "still")
	c.waitConverged()
	for _, m := range c.node("n1").store.Members() {
		if m.NodeID == "n2" && (m.GossipAddr != originalGossip || m.State != MemberAlive || m.RaftAddr != original.store.Addr()) {
			t.Fatalf("n1 sees n2 as %+v after the impostor, want the original at %s", m, originalGossip)
		}
	}
}

func TestJoinNowhereFails(t *testing.T) {
	free := freeLoopbackAddr(t)
	tests := []struct {
		name string
		cfg  func(t *testing.T) Config
	}{
		{"in-memory address nobody has", func(t *testing.T) Config {
			c := newTestCluster(t)
			cfg := c.config("lost", "127.0.0.1:1")
			cfg.JoinTimeout = 300 * time.Millisecond
			return cfg
		}},
		{"closed loopback port", func(t *testing.T) Config {
			cfg := fastConfig("lost", t.TempDir())
			cfg.Bootstrap = false
			cfg.GossipAddr = "127.0.0.1:0"
			cfg.ClusterAddr = "127.0.0.1:0"
			cfg.Identity = testIdentity(t, cfg.NodeID)
			cfg.Join = []string{free}
			cfg.JoinTimeout = 300 * time.Millisecond
			return cfg
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(testContext(t), tt.cfg(t), newDedupMachine())
			if err == nil {
				s.Close()
				t.Fatal("Open joined nothing and succeeded")
			}
			if !errors.Is(err, ErrJoinFailed) {
				t.Fatalf("Open = %v, want ErrJoinFailed", err)
			}
		})
	}
}

func TestDataDirOfAnotherClusterIsRefused(t *testing.T) {
	c := newTestCluster(t, withPersistence())
	x := c.start("x1")
	c.waitLeader("x1")
	joiner := c.start("x2", x.store.GossipAddr())
	c.waitConfigured(2)
	if got, want := joiner.store.ClusterID(), x.store.ClusterID(); got != want || got == "" {
		t.Fatalf("joiner adopted cluster id %q, want the seed's %q", got, want)
	}

	// y1 is its own one-node cluster, with data.
	y := c.start("y1")
	c.waitLeader("y1")
	c.propose("y1", "rid-y", "y")
	yCfg := y.cfg
	c.kill("y1")

	yCfg.Bootstrap = false
	yCfg.Join = []string{x.store.GossipAddr()}
	s, err := Open(testContext(t), yCfg, newDedupMachine())
	if err == nil {
		s.Close()
		t.Fatal("a data dir of another cluster joined")
	}
	if !errors.Is(err, ErrClusterMismatch) {
		t.Fatalf("Open = %v, want ErrClusterMismatch", err)
	}
	if st := x.store.Status(); st.Voters+st.NonVoters != 2 {
		t.Fatalf("cluster x changed: %+v", st)
	}
	// y's directory is intact: alone again, it still has its write.
	yCfg.Join = nil
	again := c.open(yCfg)
	c.waitLeader("y1")
	if err := again.store.Barrier(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if got := again.sm.items(); !slices.Equal(got, []string{"y"}) {
		t.Fatalf("y1 after the refused join holds %q", got)
	}
}

func TestClusterConfigErrors(t *testing.T) {
	network := NewInmemNetwork()
	tests := []struct {
		name string
		edit func(*Config)
	}{
		{"MaxVoters 4", func(c *Config) { c.MaxVoters = 4 }},
		{"MaxVoters 1", func(c *Config) { c.MaxVoters = 1 }},
		{"negative grace", func(c *Config) { c.DeadNodeGrace = -time.Second }},
		{"Join without gossip", func(c *Config) { c.Join = []string{"127.0.0.1:7946"} }},
		{"gossip without cluster address", func(c *Config) { c.GossipAddr = "127.0.0.1:0" }},
		{"clustered over TCP without an identity", func(c *Config) { c.GossipAddr, c.ClusterAddr = "127.0.0.1:0", "127.0.0.1:0" }},
		{"identity of another node", func(c *Config) { c.Network, c.Identity = network, testIdentity(t, "someone-else") }},
		{"clustered in memory without a network", func(c *Config) {
			c.InMemory, c.GossipAddr, c.ClusterAddr = true, "127.0.0.1:0", "127.0.0.1:0"
		}},
		{"meta too large for gossip", func(c *Config) {
			c.Network = network
			c.Meta = map[string]string{"big": string(make([]byte, 600))}
		}},
		{"in-memory gossip address without a port", func(c *Config) {
			c.Network = network
			c.GossipAddr = "somewhere"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := fastConfig("n", t.TempDir())
			tt.edit(&cfg)
			s, err := Open(testContext(t), cfg, &listMachine{})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
		})
	}
}

func TestInmemNetworkRefusesTakenAddresses(t *testing.T) {
	c := newTestCluster(t)
	c.start("n1")
	cfg := c.config("n1b")
	cfg.BindAddr = "n1" // n1's raft address
	if s, err := Open(testContext(t), cfg, newDedupMachine()); err == nil {
		s.Close()
		t.Fatal("two stores share one in-memory raft address")
	}
}

// freeLoopbackAddr returns a loopback address nobody listens on.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestTCPClusterRestartsFromDisk(t *testing.T) {
	logger := testLogger()
	type nodeFiles struct {
		cfg Config
		sm  *dedupMachine
		s   *Store
	}
	nodes := make([]*nodeFiles, 3)
	open := func(i int) {
		t.Helper()
		n := nodes[i]
		n.sm = newDedupMachine()
		s, err := Open(testContext(t), n.cfg, n.sm)
		if err != nil {
			t.Fatalf("Open %s: %v", n.cfg.NodeID, err)
		}
		n.s = s
		t.Cleanup(func() { s.Close() })
	}
	for i := range nodes {
		cfg := fastConfig(fmt.Sprintf("tcp%d", i+1), t.TempDir())
		cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = 200*time.Millisecond, 200*time.Millisecond, 100*time.Millisecond
		cfg.GossipAddr, cfg.ClusterAddr = "127.0.0.1:0", "127.0.0.1:0"
		cfg.Identity = testIdentity(t, cfg.NodeID)
		cfg.Logger = logger
		if i > 0 {
			cfg.Bootstrap = false
			cfg.Join = []string{nodes[0].s.GossipAddr()}
		}
		nodes[i] = &nodeFiles{cfg: cfg}
		open(i)
	}
	waitAgreed := func() *Store {
		var leader *Store
		waitFor(t, "a leader with three voters that all agree on", func() bool {
			leader = nil
			for _, n := range nodes {
				if n.s.Status().Role == "leader" {
					leader = n.s
				}
			}
			if leader == nil || leader.Status().Voters != 3 {
				return false
			}
			for _, n := range nodes {
				if n.s.Status().LeaderID != leader.cfg.NodeID {
					return false
				}
			}
			return true
		})
		return leader
	}
	waitAgreed()
	for i, n := range nodes {
		if _, _, err := n.s.Propose(testContext(t), fmt.Appendf(nil, "rid-a%d|a%d", i, i)); err != nil {
			t.Fatalf("Propose on %s: %v", n.cfg.NodeID, err)
		}
	}
	// Restart every node on the addresses it had, so the stored
	// configuration still points at them.
	for _, n := range nodes {
		n.cfg.BindAddr = n.s.Addr()
		n.cfg.GossipAddr = n.s.GossipAddr()
		n.cfg.ClusterAddr = n.s.ClusterAddr()
		if err := n.s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range nodes {
		n.cfg.Join = []string{nodes[(i+1)%3].cfg.GossipAddr}
		open(i)
	}
	waitAgreed()
	for i, n := range nodes {
		if _, _, err := n.s.Propose(testContext(t), fmt.Appendf(nil, "rid-b%d|b%d", i, i)); err != nil {
			t.Fatalf("Propose after restart on %s: %v", n.cfg.NodeID, err)
		}
	}
	want := []string{"a0", "a1", "a2", "b0", "b1", "b2"}
	for _, n := range nodes {
		if _, err := n.s.ReadIndex(testContext(t)); err != nil {
			t.Fatal(err)
		}
		if got := n.sm.items(); !slices.Equal(got, want) {
			t.Fatalf("%s after restart holds %q, want %q", n.cfg.NodeID, got, want)
		}
	}
}

func TestMemberlistLogLines(t *testing.T) {
	tests := []struct {
		line      string
		wantLevel slog.Level
		wantMsg   string
	}{
		{"[DEBUG] memberlist: Stream connection from=127.0.0.1:1\n", slog.LevelDebug, "Stream connection from=127.0.0.1:1"},
		{"[WARN] memberlist: Refuting a dead message", slog.LevelWarn, "Refuting a dead message"},
		{"[ERR] memberlist: Conflicting address", slog.LevelError, "Conflicting address"},
		{"[INFO] memberlist: Marking n2 as failed", slog.LevelInfo, "Marking n2 as failed"},
		{"[ODD] memberlist: x", slog.LevelInfo, "[ODD] memberlist: x"},
		{"no level at all", slog.LevelInfo, "no level at all"},
		{"[", slog.LevelInfo, "["},
	}
	for _, tt := range tests {
		level, msg := parseMemberlistLine(tt.line)
		if level != tt.wantLevel || msg != tt.wantMsg {
			t.Errorf("parse(%q) = %v %q, want %v %q", tt.line, level, msg, tt.wantLevel, tt.wantMsg)
		}
	}
}

func FuzzParseMemberlistLine(f *testing.F) {
	f.Add("[DEBUG] memberlist: hello")
	f.Add("[ERR]")
	f.Add("]]][[[")
	f.Fuzz(func(t *testing.T, line string) {
		_, msg := parseMemberlistLine(line)
		if len(msg) > len(line) {
			t.Fatalf("message %q longer than line %q", msg, line)
		}
	})
}
