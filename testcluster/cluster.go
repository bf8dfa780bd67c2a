package testcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/palaver-chat/palaver/node"
	"github.com/palaver-chat/palaver/raft"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// Options configures a cluster.
type Options struct {
	Nodes int    // default 3
	Dir   string // data directories go in Dir/<node name>; default a temporary directory removed by Close
	// Seed seeds the workload and the nemesis of Run; Start itself draws nothing at random.
	Seed   int64
	Logger *slog.Logger // the nodes' logs; default: discarded
	// DeadNodeGrace is how long a killed node may stay away before the leader removes it from the
	// Raft configuration; default 5 minutes, longer than any nemesis outage, so a restart always
	// rejoins as the voter it was.
	DeadNodeGrace time.Duration
	// RaftProfile names the nodes' Raft timing (raft.Profile); default raft.ProfileProduction,
	// what `palaver serve` ships.
	RaftProfile string
	// StartTimeout bounds each node start (leader election, catch-up, registering its key);
	// default 60 s.
	StartTimeout time.Duration
	// Processes, when set, runs every node as a separate `palaver serve` process on loopback
	// ports with its data on disk; Kill is then kill -9. Otherwise the nodes run in this process
	// and talk through an in-process network (raft.InmemNetwork) that can be partitioned.
	Processes *ProcessOptions
}

func (o *Options) defaults() {
	if o.Nodes <= 0 {
		o.Nodes = 3
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.DeadNodeGrace <= 0 {
		o.DeadNodeGrace = 5 * time.Minute
	}
	if o.RaftProfile == "" {
		o.RaftProfile = raft.ProfileProduction
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 60 * time.Second
	}
}

// NodeAddrs are one node's fixed loopback addresses: a restarted node binds the same ones.
type NodeAddrs struct {
	Name    string // node name (Raft server id, did:web host)
	DataDir string
	IRC     string
	HTTP    string
	Raft    string
	Gossip  string
	Cluster string // cluster RPC (forwarded proposals, read index)
	Debug   string // a process's --pprof-addr, where the harness reads its state hash
}

// Cluster is N real nodes with their data on disk: in this process (IRC and HTTP on loopback
// ports, Raft, gossip and cluster RPC on an in-process network that can be cut), or as separate
// processes on loopback ports (Options.Processes).
type Cluster struct {
	opts    Options
	addrs   []NodeAddrs
	tempDir string // removed by Close when Start created it

	// In-process only: the network between the nodes (Raft, gossip and the cluster listener,
	// whose HTTP plane carries the event exchange) and each node's injected log write delay.
	network  *raft.InmemNetwork
	diskSlow []atomic.Int64 // nanoseconds added to each Raft log write
	timing   raft.Timing    // the nodes' Raft timing (Options.RaftProfile)

	mu      sync.RWMutex
	nodes   []instance                       // nil while a node is down
	up      []chan struct{}                  // closed while node i runs
	clients []map[*ircclient.Client]struct{} // IRC clients dialled to node i through DialIRC
	// upgraded marks the processes that run Processes.UpgradeTo instead of Processes.Binary.
	upgraded []bool
	closed   bool
}

// Start starts opts.Nodes nodes: the first bootstraps, the others join it. It returns once every
// node runs and the first node sees them all alive as voters (or up to 3 voters and the rest
// non-voters).
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	opts.defaults()
	timing, err := raft.Profile(opts.RaftProfile)
	if err != nil {
		return nil, fmt.Errorf("testcluster: %w", err)
	}
	c := &Cluster{opts: opts, timing: timing, diskSlow: make([]atomic.Int64, opts.Nodes)}
	if opts.Processes == nil {
		c.network = raft.NewInmemNetwork()
	} else if opts.Processes.Binary == "" {
		return nil, errors.New("testcluster: Processes.Binary is required")
	}
	if c.opts.Dir == "" {
		if c.tempDir, err = os.MkdirTemp("", "palaver-testcluster-"); err != nil {
			return nil, fmt.Errorf("testcluster: data directory: %w", err)
		}
		c.opts.Dir = c.tempDir
	}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	ports, err := reservePorts(6 * opts.Nodes)
	if err != nil {
		return nil, fmt.Errorf("testcluster: %w", err)
	}
	for i := range opts.Nodes {
		name := fmt.Sprintf("node-%d.testcluster", i)
		p := ports[6*i : 6*i+6]
		c.addrs = append(c.addrs, NodeAddrs{
			Name: name, DataDir: filepath.Join(c.opts.Dir, name),
			IRC: loopbackAddr(p[0]), HTTP: loopbackAddr(p[1]), Raft: loopbackAddr(p[2]), Gossip: loopbackAddr(p[3]), Cluster: loopbackAddr(p[4]), Debug: loopbackAddr(p[5]),
		})
		c.up = append(c.up, make(chan struct{}))
		c.clients = append(c.clients, map[*ircclient.Client]struct{}{})
	}
	c.nodes = make([]instance, opts.Nodes)
	c.upgraded = make([]bool, opts.Nodes)
	for i := range opts.Nodes {
		var join []string
		if i > 0 {
			join = []string{c.addrs[0].Gossip}
		}
		if err := c.startNode(ctx, i, join); err != nil {
			return nil, err
		}
	}
	if err := c.waitMembers(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// config is node i's in-process configuration; join lists the gossip addresses it joins
// through, with the secret file the first node created. Raft, gossip and the cluster listener
// (cluster RPC and the event exchange, over mutual TLS) go through c.network (the addresses are
// names there), Raft log writes through the node's disk delay.
func (c *Cluster) config(i int, join []string) node.Config {
	a := c.addrs[i]
	cfg := node.LoopbackConfig(a.DataDir)
	cfg.Raft = c.timing
	cfg.NodeName, cfg.IRCAddr, cfg.HTTPAddr, cfg.RaftAddr, cfg.GossipAddr, cfg.ClusterAddr = a.Name, a.IRC, a.HTTP, a.Raft, a.Gossip, a.Cluster
	cfg.Join, cfg.ClusterSecret, cfg.DeadNodeGrace = join, c.secretFor(join), c.opts.DeadNodeGrace
	cfg.Opers = map[string]string{operName: operPassword}
	cfg.Faults = &node.Faults{
		Network:       c.network,
		LogWriteDelay: func() time.Duration { return time.Duration(c.diskSlow[i].Load()) },
	}
	return cfg
}

// secretFor is the --cluster-secret of a node that joins through join: the secret file the first
// node created in its data directory ("" for a node that does not join).
func (c *Cluster) secretFor(join []string) string {
	if len(join) == 0 {
		return ""
	}
	return filepath.Join(c.addrs[0].DataDir, "cluster", "secret")
}

func (c *Cluster) startNode(ctx context.Context, i int, join []string) error {
	startCtx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	var inst instance
	if c.opts.Processes != nil {
		p, err := c.startProcess(startCtx, i, join)
		if err != nil {
			return fmt.Errorf("testcluster: start %s: %w", c.addrs[i].Name, err)
		}
		inst = p
	} else {
		n, err := node.Start(startCtx, c.config(i, join), c.opts.Logger)
		if err != nil {
			return fmt.Errorf("testcluster: start %s: %w", c.addrs[i].Name, err)
		}
		inst = inProcessNode{n}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		inst.stop()
		return errors.New("testcluster: cluster closed")
	}
	c.nodes[i] = inst
	close(c.up[i])
	return nil
}

// waitMembers waits until the first node sees every node alive in the Raft configuration. For
// processes, whose members cannot be listed from here, it waits until every node agrees on the
// leader: each started only once the leader had added it.
func (c *Cluster) waitMembers(ctx context.Context) error {
	if c.opts.Processes != nil {
		return poll(ctx, 50*time.Millisecond, func() (bool, error) {
			return c.Leader() >= 0, nil
		})
	}
	want := min(c.opts.Nodes, 3) // default MaxVoters
	return poll(ctx, 20*time.Millisecond, func() (bool, error) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		if c.nodes[0] == nil {
			return false, errors.New("testcluster: the first node is down")
		}
		first := c.nodes[0].inProcess()
		voters, members := 0, 0
		for _, m := range first.RaftMembers() {
			if m.State != raft.MemberAlive || m.Suffrage == raft.NotInConfiguration {
				continue
			}
			members++
			if m.Suffrage == raft.Voter {
				voters++
			}
		}
		return voters == want && members == c.opts.Nodes, nil
	})
}

// N is the number of nodes.
func (c *Cluster) N() int { return len(c.addrs) }

// Node returns node i, or nil while it is down or when the nodes run as processes.
func (c *Cluster) Node(i int) *node.Node {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.nodes[i] == nil {
		return nil
	}
	return c.nodes[i].inProcess()
}

// running returns node i's instance, or nil while it is down.
func (c *Cluster) running(i int) instance {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.nodes[i]
}

// Addrs returns node i's addresses, which stay the same across restarts.
func (c *Cluster) Addrs(i int) NodeAddrs { return c.addrs[i] }

// Up reports whether node i is running.
func (c *Cluster) Up(i int) bool { return c.running(i) != nil }

// WaitUp blocks until node i runs or ctx ends.
func (c *Cluster) WaitUp(ctx context.Context, i int) error {
	c.mu.RLock()
	ch := c.up[i]
	c.mu.RUnlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Kill stops node i. A process is killed with kill -9. In this process node.Close is graceful
// on the server side (it flushes client send queues, closes Raft and the event store cleanly):
// the package has no abrupt stop. To make the stop abrupt where it matters for the checks, Kill
// first closes every IRC client dialled to node i through DialIRC, so lines the node had queued
// but not yet written are lost to those clients, as they would be in a crash. Killing a node
// that is down is an error.
func (c *Cluster) Kill(i int) error {
	c.mu.Lock()
	n := c.nodes[i]
	if n == nil {
		c.mu.Unlock()
		return fmt.Errorf("testcluster: kill %s: not running", c.addrs[i].Name)
	}
	c.nodes[i] = nil
	c.up[i] = make(chan struct{})
	clients := c.clients[i]
	c.clients[i] = map[*ircclient.Client]struct{}{}
	c.mu.Unlock()
	for cl := range clients {
		cl.Close()
	}
	if err := n.stop(); err != nil {
		return fmt.Errorf("testcluster: kill %s: %w", c.addrs[i].Name, err)
	}
	return nil
}

// Restart starts node i again on its data directory and addresses, joining through the other
// nodes. A start that fails because a port is briefly still in use is retried until ctx ends.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	if c.Up(i) {
		return fmt.Errorf("testcluster: restart %s: already running", c.addrs[i].Name)
	}
	var join []string
	for j, a := range c.addrs {
		if j != i {
			join = append(join, a.Gossip)
		}
	}
	backoff := 50 * time.Millisecond
	for {
		err := c.startNode(ctx, i, join)
		if err == nil || !strings.Contains(err.Error(), "address already in use") {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// Leader returns the index of the running node that is the Raft leader, or -1.
func (c *Cluster) Leader() int {
	c.mu.RLock()
	nodes := append([]instance(nil), c.nodes...)
	c.mu.RUnlock()
	for i, n := range nodes {
		if n != nil && n.role() == "leader" {
			return i
		}
	}
	return -1
}

// NodeState is one running node's replica as WaitConverged compares it.
type NodeState struct {
	Node         string
	AppliedIndex uint64 // Raft index applied (commands and configuration entries)
	StateIndex   uint64 // last command index in the replicated state
	Hash         [32]byte
}

// States reads every running node's applied index and state hash (a process's from
// /debug/palaver/state on its --pprof-addr); a node whose state cannot be read is left out.
func (c *Cluster) States() []NodeState {
	c.mu.RLock()
	nodes := append([]instance(nil), c.nodes...)
	c.mu.RUnlock()
	var out []NodeState
	for i, n := range nodes {
		if n == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := n.state(ctx)
		cancel()
		if err != nil {
			continue
		}
		st.Node = c.addrs[i].Name
		out = append(out, st)
	}
	return out
}

// ErrNotConverged reports that the running nodes did not reach the same state in time.
var ErrNotConverged = errors.New("testcluster: nodes did not converge")

// WaitConverged waits until every running node applied the same Raft index and has the same
// state hash. On timeout the error wraps ErrNotConverged and lists each node's index and hash.
func (c *Cluster) WaitConverged(ctx context.Context) error {
	var last []NodeState
	err := poll(ctx, 20*time.Millisecond, func() (bool, error) {
		last = c.States()
		if len(last) == 0 {
			return false, errors.New("testcluster: no node is running")
		}
		if len(last) < c.runningCount() {
			return false, nil // a node's state could not be read
		}
		for _, s := range last[1:] {
			if s.AppliedIndex != last[0].AppliedIndex || s.Hash != last[0].Hash {
				return false, nil
			}
		}
		return true, nil
	})
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w: %s", ErrNotConverged, describeStates(last))
	}
	return err
}

func describeStates(states []NodeState) string {
	parts := make([]string, 0, len(states))
	for _, s := range states {
		parts = append(parts, fmt.Sprintf("%s applied=%d state=%d hash=%x", s.Node, s.AppliedIndex, s.StateIndex, s.Hash[:6]))
	}
	return strings.Join(parts, "; ")
}

func (c *Cluster) runningCount() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	count := 0
	for _, n := range c.nodes {
		if n != nil {
			count++
		}
	}
	return count
}

// Close stops every running node and closes the clients dialled through the cluster. It removes
// the data directory when Start created it.
func (c *Cluster) Close() error {
	c.mu.Lock()
	c.closed = true
	nodes := c.nodes
	c.nodes = make([]instance, len(nodes))
	var clients []*ircclient.Client
	for i := range c.clients {
		for cl := range c.clients[i] {
			clients = append(clients, cl)
		}
		c.clients[i] = map[*ircclient.Client]struct{}{}
	}
	c.mu.Unlock()
	for _, cl := range clients {
		cl.Close()
	}
	var errs []error
	for _, n := range nodes {
		if n != nil {
			errs = append(errs, n.stop())
		}
	}
	if c.tempDir != "" {
		errs = append(errs, os.RemoveAll(c.tempDir))
	}
	return errors.Join(errs...)
}

// poll calls cond every interval until it returns true or an error, or ctx ends.
func poll(ctx context.Context, interval time.Duration, cond func() (bool, error)) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
