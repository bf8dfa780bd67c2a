package raft

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/testcluster/poll"
)

// testCluster is an in-process cluster on one InmemNetwork.
type testCluster struct {
	t       testing.TB
	network *InmemNetwork
	// persistent gives every node a data directory, so a closed node
	// reopens with its state; otherwise storage is in memory.
	persistent bool
	base       string // parent of the nodes' data directories
	grace      time.Duration
	maxVoters  int
	logger     *slog.Logger
	commit     time.Duration // CommitTimeout; default 5ms
	stabilize  time.Duration // StabilizationTime; default 200ms
	nodeKeys   NodeKeys      // shared by every node, standing in for their replicated state
	// levels are the nodes' FeatureLevels (a node not listed: 0), entryLevel their EntryLevel.
	levels     map[string]int
	entryLevel func([]byte) int

	mu    sync.Mutex
	nodes map[string]*testNode
	order []string
	// removed counts OnNodeRemoved calls by removed node, on any node.
	removed map[string]*atomic.Int64
}

type testNode struct {
	id    string
	cfg   Config
	store *Store
	sm    *dedupMachine
}

type clusterOption func(*testCluster)

func withPersistence() clusterOption          { return func(c *testCluster) { c.persistent = true } }
func withGrace(d time.Duration) clusterOption { return func(c *testCluster) { c.grace = d } }
func withMaxVoters(n int) clusterOption       { return func(c *testCluster) { c.maxVoters = n } }
func withNodeKeys(k NodeKeys) clusterOption   { return func(c *testCluster) { c.nodeKeys = k } }
func withLogger(l *slog.Logger) clusterOption { return func(c *testCluster) { c.logger = l } }
func withLevels(levels map[string]int, entry func([]byte) int) clusterOption {
	return func(c *testCluster) { c.levels, c.entryLevel = levels, entry }
}
func withStabilization(d time.Duration) clusterOption {
	return func(c *testCluster) { c.stabilize = d }
}
func withCommitTimeout(d time.Duration) clusterOption {
	return func(c *testCluster) { c.commit = d }
}

// testLogger is silent unless PALAVER_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("PALAVER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func newTestCluster(t testing.TB, opts ...clusterOption) *testCluster {
	c := &testCluster{
		t:         t,
		network:   NewInmemNetwork(),
		grace:     time.Hour,
		commit:    5 * time.Millisecond,
		stabilize: 200 * time.Millisecond,
		logger:    testLogger(),
		nodes:     map[string]*testNode{},
		removed:   map[string]*atomic.Int64{},
	}
	for _, opt := range opts {
		opt(c)
	}
	// The nodes' directories live under one made before closeAll is registered: cleanups run last
	// first, so the nodes are closed before their directories are removed (a running node writes
	// there, e.g. its saved gossip peers).
	c.base = t.TempDir()
	t.Cleanup(c.closeAll)
	return c
}

// startCluster opens n nodes named n1..nN: n1 bootstraps, the others join
// it; it returns once the leader has every node in its configuration.
func startCluster(t testing.TB, n int, opts ...clusterOption) *testCluster {
	t.Helper()
	c := newTestCluster(t, opts...)
	c.start("n1")
	c.waitLeader()
	for i := 2; i <= n; i++ {
		c.start(fmt.Sprintf("n%d", i), c.node("n1").store.GossipAddr())
	}
	c.waitConfigured(n)
	return c
}

// config is node id's configuration; join empty means bootstrap.
func (c *testCluster) config(id string, join ...string) Config {
	cfg := Config{
		NodeID:            id,
		InMemory:          !c.persistent,
		Network:           c.network,
		Identity:          testIdentity(c.t, id),
		NodeKeys:          c.nodeKeys,
		Bootstrap:         len(join) == 0,
		Join:              join,
		JoinTimeout:       5 * time.Second,
		MaxVoters:         c.maxVoters,
		DeadNodeGrace:     c.grace,
		StabilizationTime: c.stabilize,
		Timing: Timing{HeartbeatTimeout: 100 * time.Millisecond, ElectionTimeout: 100 * time.Millisecond,
			LeaderLeaseTimeout: 50 * time.Millisecond, CommitTimeout: c.commit},
		Meta:          map[string]string{"http": id + ":http"},
		Logger:        c.logger,
		OnNodeRemoved: c.countRemoval,
		FeatureLevel:  c.levels[id],
		EntryLevel:    c.entryLevel,
	}
	if c.persistent {
		dir, err := os.MkdirTemp(c.base, id+"-")
		if err != nil {
			c.t.Fatalf("node directory: %v", err)
		}
		cfg.Dir = dir
	}
	return cfg
}

func (c *testCluster) countRemoval(id string) {
	c.mu.Lock()
	counter, ok := c.removed[id]
	if !ok {
		counter = new(atomic.Int64)
		c.removed[id] = counter
	}
	c.mu.Unlock()
	counter.Add(1)
}

func (c *testCluster) removals(id string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if counter, ok := c.removed[id]; ok {
		return counter.Load()
	}
	return 0
}

func (c *testCluster) totalRemovals() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var total int64
	for _, counter := range c.removed {
		total += counter.Load()
	}
	return total
}

// start opens a new node.
func (c *testCluster) start(id string, join ...string) *testNode {
	c.t.Helper()
	return c.open(c.config(id, join...))
}

// open opens a node with cfg, replacing a closed one of the same id.
func (c *testCluster) open(cfg Config) *testNode {
	c.t.Helper()
	sm := newDedupMachine()
	store, err := Open(testContext(c.t), cfg, sm)
	if err != nil {
		c.t.Fatalf("Open %s: %v", cfg.NodeID, err)
	}
	n := &testNode{id: cfg.NodeID, cfg: cfg, store: store, sm: sm}
	c.mu.Lock()
	if _, ok := c.nodes[n.id]; !ok {
		c.order = append(c.order, n.id)
	}
	c.nodes[n.id] = n
	c.mu.Unlock()
	return n
}

// restart reopens a closed node with its previous configuration (and so
// its data directory when persistent).
func (c *testCluster) restart(id string) *testNode {
	c.t.Helper()
	old := c.node(id)
	cfg := old.cfg
	cfg.Bootstrap = false
	if len(cfg.Join) == 0 {
		for _, other := range c.live() {
			if other.id != id {
				cfg.Join = append(cfg.Join, other.store.GossipAddr())
			}
		}
	}
	return c.open(cfg)
}

func (c *testCluster) node(id string) *testNode {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.nodes[id]
	if !ok {
		c.t.Fatalf("no node %s", id)
	}
	return n
}

// live returns the open nodes in start order.
func (c *testCluster) live() []*testNode {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*testNode
	for _, id := range c.order {
		if n := c.nodes[id]; !n.store.isClosed() {
			out = append(out, n)
		}
	}
	return out
}

func (c *testCluster) kill(id string) {
	c.t.Helper()
	if err := c.node(id).store.Close(); err != nil {
		c.t.Fatalf("Close %s: %v", id, err)
	}
}

func (c *testCluster) closeAll() {
	for _, n := range c.live() {
		n.store.Close()
	}
}

// leader returns the live node that is leader, or nil.
func (c *testCluster) leader() *testNode {
	for _, n := range c.live() {
		if n.store.Status().Role == "leader" {
			return n
		}
	}
	return nil
}

// waitLeader waits for a leader among the live nodes that every other live
// node agrees on, and returns it.
func (c *testCluster) waitLeader(among ...string) *testNode {
	c.t.Helper()
	var found *testNode
	poll.UntilShowing(c.t, "an agreed leader", func() bool {
		found = nil
		nodes := c.live()
		if len(among) > 0 {
			nodes = slices.DeleteFunc(nodes, func(n *testNode) bool { return !slices.Contains(among, n.id) })
		}
		for _, n := range nodes {
			if n.store.Status().Role == "leader" {
				found = n
			}
		}
		if found == nil {
			return false
		}
		for _, n := range nodes {
			if n.store.Status().LeaderID != found.id {
				return false
			}
		}
		return true
	}, func() string { return c.describe(among) })
	return found
}

// describe lists what the live nodes (those named in among, when given) say of their role, term,
// leader and configuration, for a failure message.
func (c *testCluster) describe(among []string) string {
	var out []string
	for _, n := range c.live() {
		if len(among) > 0 && !slices.Contains(among, n.id) {
			continue
		}
		st := n.store.Status()
		out = append(out, fmt.Sprintf("%s %s term %d leader %q voters %d non-voters %d commit %d last %d",
			n.id, st.Role, st.Term, st.LeaderID, st.Voters, st.NonVoters, st.CommitIndex, st.LastLogIndex))
	}
	return strings.Join(out, "; ")
}

// waitConfigured waits until the leader's configuration holds n servers, as many
// of them voters as MaxVoters allows (joiners are promoted once caught up), every
// live node's log holds the entries the leader has committed, and every live node
// has heard of a leader. The logs too, not only the leader's count: a follower
// that has not yet received a promotion refuses the promoted node's votes, so a
// test that cuts the leader off right after its configuration changed could leave
// the other two unable to elect anyone.
func (c *testCluster) waitConfigured(n int) {
	c.t.Helper()
	maxVoters := c.maxVoters
	if maxVoters == 0 {
		maxVoters = defaultMaxVoters
	}
	poll.UntilShowing(c.t, fmt.Sprintf("%d servers configured, %d of them voters, in every log", n, min(n, maxVoters)), func() bool {
		leader := c.leader()
		if leader == nil {
			return false
		}
		st := leader.store.Status()
		if st.Voters+st.NonVoters != n || st.Voters != min(n, maxVoters) {
			return false
		}
		for _, node := range c.live() {
			if node.store.Status().LastLogIndex < st.CommitIndex {
				return false
			}
		}
		return true
	}, func() string { return c.describe(nil) })
	c.waitLeader()
}

// propose proposes "rid|payload" on node id and fails the test on error.
func (c *testCluster) propose(id, rid, payload string) (int, uint64) {
	c.t.Helper()
	resp, index, err := c.node(id).store.Propose(testContext(c.t), []byte(rid+"|"+payload))
	if err != nil {
		c.t.Fatalf("Propose on %s: %v", id, err)
	}
	return resp.(int), index
}

// waitConverged waits until every live node holds the same items, and
// returns them.
func (c *testCluster) waitConverged() []string {
	c.t.Helper()
	var items []string
	waitFor(c.t, "equal state on every node", func() bool {
		nodes := c.live()
		items = nodes[0].sm.items()
		for _, n := range nodes[1:] {
			if !slices.Equal(n.sm.items(), items) {
				return false
			}
		}
		return true
	})
	return items
}

// waitFor polls cond until it holds or testTimeout passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	poll.Within(t, testTimeout, what, cond)
}

func countOf(items []string, item string) int {
	n := 0
	for _, it := range items {
		if it == item {
			n++
		}
	}
	return n
}
