package raft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	hraft "github.com/hashicorp/raft"
)

// Store owns the *raft.Raft of this node, its storage and its transport,
// and, when clustered, its gossip membership and cluster RPC.
type Store struct {
	cfg            Config
	logger         *slog.Logger
	raft           *hraft.Raft
	fsm            *fsmAdapter
	transport      hraft.Transport
	closeTransport func() error
	stores         *stores
	// guard bounds the connections of the cluster ports (connguard.go).
	guard *connGuard
	// running is raft once started, for the transport's goroutines (raftpeers.go).
	running atomic.Pointer[hraft.Raft]

	leader     *leaderWatch
	leadership *leadership
	membership *broadcast // gossip or configuration changed
	notifier   *membershipNotifier
	// seeds are the gossip addresses joined at start and retried while alone: Config.Join, and
	// with raft state also the members saved at the last membership change (gossippeers.go).
	seeds []string
	// lock tier 9 (leaf)
	peersMu    sync.Mutex
	savedPeers []string

	// Clustered only (nil otherwise).
	gossip    *gossip
	rpcServer *rpcServer
	rpcClient *rpcClient
	rpcAddr   string // advertised cluster RPC address
	// With an Identity: the TLS front of the cluster listener, and the plain dialer under it.
	mux         *clusterMux
	clusterDial func(context.Context, string) (net.Conn, error)

	// lock tier 9 (leaf)
	clusterMu sync.Mutex
	clusterID string

	hooks    testHooks
	operator operatorState // the node layer's report hook (operator.go)
	// nudge tells followers about commits at once (commitnudge.go); nil
	// unclustered, where there are no followers.
	nudge *commitNudge

	closing   chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// Open starts raft on the configured storage.
//
// Without Join, a node with Bootstrap set and no existing state becomes the
// single voter of a new cluster; with state it resumes from its snapshot and
// log. With Join, a node without state joins any listed member within
// JoinTimeout (or fails with ErrJoinFailed, ErrDuplicateNodeName or
// ErrClusterMismatch, before raft starts) and waits for the leader to add
// it; a node with state tries the members once and otherwise keeps trying
// in the background. The state machine is restored from the newest
// snapshot before Open returns; later entries are applied once a leader
// commits. Call WaitForLeader before proposing.
func Open(ctx context.Context, cfg Config, sm StateMachine) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("raft: open: %w", err)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger.With("node", cfg.NodeID)
	s := &Store{
		cfg:        cfg,
		logger:     logger,
		membership: newBroadcast(),
		closing:    make(chan struct{}),
	}
	s.fsm = newFSMAdapter(sm, s.membership.notify)
	if err := s.open(ctx); err != nil {
		return nil, errors.Join(err, s.release())
	}
	return s, nil
}

// open does Open's work; on error, release undoes whatever it set up.
func (s *Store) open(ctx context.Context) error {
	cfg := s.cfg
	hlog := newHCLogAdapter(s.logger)
	st, hasState, err := openStores(cfg, hlog)
	if err != nil {
		return err
	}
	if cfg.LogWriteDelay != nil {
		st.logs = &slowLogStore{LogStore: st.logs, delay: cfg.LogWriteDelay}
	}
	s.stores = st
	if s.clusterID, err = readClusterID(st.stable); err != nil {
		return err
	}
	if s.clusterID == "" && hasState {
		// Raft state written before cluster ids existed: that node was its
		// own one-node cluster.
		if err := s.adoptClusterID(newClusterID()); err != nil {
			return err
		}
	}
	bootstrap := cfg.Bootstrap && len(cfg.Join) == 0 && !hasState
	if bootstrap && s.clusterID == "" {
		if err := s.adoptClusterID(newClusterID()); err != nil {
			return err
		}
	}
	s.guard = openConnGuard(s.logger.With("component", "cluster-ports"))
	if s.transport, s.closeTransport, err = openTransport(cfg, s.guard, s.raftPeerAllowed, hlog.Named("raft-transport")); err != nil {
		return err
	}
	if cfg.clustered() {
		if err := s.startCluster(ctx, hasState); err != nil {
			return err
		}
	}

	r, err := hraft.NewRaft(cfg.raftConfig(hlog.Named("raft")), s.fsm, st.logs, st.stable, st.snaps, s.transport)
	if err != nil {
		return fmt.Errorf("raft: start: %w", err)
	}
	s.raft = r
	s.running.Store(r)
	s.leader = watchLeader(r)
	if bootstrap {
		if err := s.bootstrap(ctx); err != nil {
			return err
		}
	}
	s.leadership = startLeadership(s)
	s.notifier = startMembershipNotifier(s)
	if cfg.clustered() && !cfg.InMemory {
		s.OnMembership(s.rememberGossipPeers)
	}
	if cfg.clustered() {
		s.nudge = newCommitNudge()
		go s.nudge.run(s)
		s.rpcServer.start()
		if s.mux != nil {
			s.mux.start()
		}
		s.leadership.add(s.reconcileLoop)
		// Announced only now that raft runs: the leader adds a node once it
		// gossips the leader's cluster id, and a node added before its raft
		// answers would cost the leader its quorum in a two-node cluster.
		s.gossip.setClusterID(s.ClusterID())
	}
	s.logger.Info("raft store open", "addr", s.Addr(), "existing_state", hasState,
		"applied_index", s.fsm.applied.get(), "in_memory", cfg.InMemory,
		"clustered", cfg.clustered(), "cluster_id", s.ClusterID())
	return nil
}

// startCluster opens the cluster RPC listener, starts gossip and, with
// Join, joins and checks the cluster id, all before raft starts: a node
// that turns out to belong elsewhere never sends a raft message.
func (s *Store) startCluster(ctx context.Context, hasState bool) error {
	cfg := s.cfg
	listener, dial, err := s.openClusterListener()
	if err != nil {
		return err
	}
	s.rpcAddr = cfg.ClusterAdvertise
	if s.rpcAddr == "" {
		s.rpcAddr = listener.Addr().String()
	}
	if cfg.Identity != nil {
		if cfg.NodeKeys != nil {
			cfg.Identity.SetPins(cfg.NodeKeys.NodeKey)
		}
		s.mux = newClusterMux(listener, cfg.Identity, s.logger.With("component", "cluster-listener"))
		s.mux.operator = s.serveOperator
		s.clusterDial = dial
		listener = s.mux.rpc
		dial = func(ctx context.Context, addr string) (net.Conn, error) {
			return s.dialClusterTLS(ctx, s.clusterDial, addr, alpnRPC)
		}
	}
	s.rpcServer = newRPCServer(listener, s.handleRPC, s.logger.With("component", "cluster-rpc"))
	s.rpcClient = newRPCClient(dial)

	var saved []string
	if !cfg.InMemory {
		if saved, err = loadGossipPeers(cfg.Dir); err != nil {
			return err
		}
	}
	s.savedPeers = saved
	s.seeds = seedsFor(cfg.Join, saved, hasState)
	s.gossip, err = startGossip(gossipOptions{
		nodeID:    cfg.NodeID,
		bindAddr:  cfg.GossipAddr,
		advertise: cfg.GossipAdvertise,
		network:   cfg.Network,
		seeds:     s.seeds,
		// The cluster id is announced once raft runs (see open).
		meta: nodeMeta{
			RaftAddr: string(s.transport.LocalAddr()),
			RPCAddr:  s.rpcAddr,
			Pins:     cfg.NodeKeys != nil && cfg.Identity != nil,
			Level:    cfg.FeatureLevel,
			Meta:     cfg.Meta,
		},
		keys:        cfg.Identity.GossipKeys(),
		guard:       s.guard,
		joinTimeout: cfg.JoinTimeout,
		deadGrace:   cfg.DeadNodeGrace,
		logger:      s.logger,
		onChange:    s.membership.notify,
	})
	if err != nil {
		return err
	}
	if len(s.seeds) == 0 {
		return nil
	}
	return s.join(ctx, hasState)
}

// openClusterListener binds the cluster RPC address and returns the
// matching dialer.
func (s *Store) openClusterListener() (net.Listener, func(context.Context, string) (net.Conn, error), error) {
	cfg := s.cfg
	if network := cfg.Network; network != nil {
		addr := cfg.ClusterAddr
		if addr == "" {
			addr = cfg.NodeID + ":cluster"
		}
		listener, err := network.openListener(cfg.NodeID, addr)
		if err != nil {
			return nil, nil, err
		}
		dial := func(ctx context.Context, addr string) (net.Conn, error) {
			return network.dialCluster(ctx, cfg.NodeID, addr)
		}
		return listener, dial, nil
	}
	listener, err := net.Listen("tcp", cfg.ClusterAddr)
	if err != nil {
		return nil, nil, fmt.Errorf("raft: cluster RPC listen on %s: %w", cfg.ClusterAddr, err)
	}
	listener = s.guard.listener("cluster", listener)
	var dialer net.Dialer
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		return dialer.DialContext(ctx, "tcp", addr)
	}
	return listener, dial, nil
}

// join joins through cfg.Join and checks the cluster id the members
// announce: a node without raft state adopts it, a node whose state
// belongs to another cluster fails.
// A node without state must succeed within JoinTimeout; one with state
// may start alone (its peers are in its configuration) and keeps retrying
// the seeds in the background.
func (s *Store) join(ctx context.Context, hasState bool) error {
	deadline := time.Now().Add(s.cfg.JoinTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	retry := newBackoff(50*time.Millisecond, time.Second)
	for {
		err := s.gossip.join(ctx, s.seeds, !hasState, deadline)
		switch {
		case errors.Is(err, ErrDuplicateNodeName):
			return err
		case err != nil && hasState:
			s.logger.Warn("no cluster member reached; starting from the existing state and retrying in the background",
				"seeds", s.seeds, "err", err)
			return nil
		case err != nil:
			return err
		}
		ids := s.gossip.clusterIDs()
		if len(ids) > 1 {
			return fmt.Errorf("%w: the members reached belong to %d clusters: %v", ErrClusterMismatch, len(ids), ids)
		}
		for id, members := range ids {
			mine := s.ClusterID()
			if mine != "" && mine != id && hasState {
				return fmt.Errorf("%w: this node's data belongs to cluster %s, the members reached (%v) to cluster %s; use an empty data directory to join it",
					ErrClusterMismatch, mine, members, id)
			}
			// Without raft state there is nothing to protect: an id kept
			// from an earlier, unfinished join is replaced.
			if mine != id {
				if err := s.adoptClusterID(id); err != nil {
					return err
				}
			}
			s.logger.Info("joined the cluster through gossip", "cluster_id", id, "via", members)
			return nil
		}
		// Only members that have not joined either answered.
		if hasState {
			return nil
		}
		if err := retry.wait(ctx, nil, deadline); err != nil {
			return fmt.Errorf("%w: no member reached through %v announces a cluster id", ErrJoinFailed, s.seeds)
		}
	}
}

// adoptClusterID stores id as this node's cluster id.
func (s *Store) adoptClusterID(id string) error {
	if err := writeClusterID(s.stores.stable, id); err != nil {
		return err
	}
	s.clusterMu.Lock()
	s.clusterID = id
	s.clusterMu.Unlock()
	return nil
}

// ClusterID is the id of the cluster this node belongs to; empty until it
// bootstrapped or joined one.
func (s *Store) ClusterID() string {
	s.clusterMu.Lock()
	defer s.clusterMu.Unlock()
	return s.clusterID
}

// bootstrap writes the first configuration: this node as the only voter.
func (s *Store) bootstrap(ctx context.Context) error {
	configuration := hraft.Configuration{Servers: []hraft.Server{{
		Suffrage: hraft.Voter,
		ID:       hraft.ServerID(s.cfg.NodeID),
		Address:  s.transport.LocalAddr(),
	}}}
	if err := waitFuture(ctx, s.raft.BootstrapCluster(configuration)); err != nil {
		return fmt.Errorf("raft: bootstrap single-node cluster: %w", err)
	}
	s.logger.Info("raft bootstrapped a single-node cluster", "addr", s.Addr(), "cluster_id", s.ClusterID())
	return nil
}

// Addr is the raft transport's address (the bound port when BindAddr asked
// for port 0).
func (s *Store) Addr() string { return string(s.transport.LocalAddr()) }

// GossipAddr is the advertised gossip address other nodes list in Join;
// empty when the node is not clustered.
func (s *Store) GossipAddr() string {
	if s.gossip == nil {
		return ""
	}
	return s.gossip.addr()
}

// ClusterAddr is the advertised cluster RPC address; empty when the node is
// not clustered.
func (s *Store) ClusterAddr() string { return s.rpcAddr }

// Close stops leader jobs, the cluster RPC and gossip, shuts raft down and
// releases the transport and storage. Waiting calls return ErrClosed. It is
// safe to call more than once. Close does not leave the cluster: the
// others see the node fail, and the leader removes it only if it stays
// away longer than DeadNodeGrace.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = s.release()
		s.logger.Info("raft store closed")
	})
	return s.closeErr
}

// release tears down whatever open set up, in reverse order.
func (s *Store) release() error {
	close(s.closing)
	var errs []error
	if s.leadership != nil {
		s.leadership.stop()
	}
	if s.notifier != nil {
		s.notifier.stop()
	}
	if s.rpcServer != nil {
		if err := s.rpcServer.close(); err != nil {
			errs = append(errs, fmt.Errorf("raft: close cluster RPC: %w", err))
		}
		s.rpcClient.close()
	}
	if s.mux != nil {
		if err := s.mux.close(); err != nil {
			errs = append(errs, fmt.Errorf("raft: close cluster listener: %w", err))
		}
	}
	if s.gossip != nil {
		if err := s.gossip.shutdown(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.raft != nil {
		if err := s.raft.Shutdown().Error(); err != nil {
			errs = append(errs, fmt.Errorf("raft: shutdown: %w", err))
		}
		s.leader.stop()
	}
	s.fsm.applied.close()
	if s.closeTransport != nil {
		if err := s.closeTransport(); err != nil {
			errs = append(errs, fmt.Errorf("raft: close transport: %w", err))
		}
	}
	if s.stores != nil {
		if err := s.stores.close(); err != nil {
			errs = append(errs, fmt.Errorf("raft: close log store: %w", err))
		}
	}
	return errors.Join(errs...)
}

func (s *Store) isClosed() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

// openStores opens the storage and, on disk, checks that it belongs to
// this node.
func openStores(cfg Config, logger *hclogAdapter) (*stores, bool, error) {
	var st *stores
	if cfg.InMemory {
		st = openMemoryStores()
	} else {
		var err error
		if st, err = openDiskStores(cfg.Dir, logger.Named("raft-snapshots")); err != nil {
			return nil, false, err
		}
	}
	hasState, err := hraft.HasExistingState(st.logs, st.stable, st.snaps)
	if err != nil {
		st.close()
		return nil, false, fmt.Errorf("raft: inspect existing state: %w", err)
	}
	if !cfg.InMemory {
		if err := claimNodeID(cfg.Dir, cfg.NodeID, hasState); err != nil {
			st.close()
			return nil, false, err
		}
	}
	return st, hasState, nil
}

// broadcast wakes every waiter at the next notify: changed returns a
// channel that notify closes (and replaces).
type broadcast struct {
	// lock tier 9 (leaf)
	mu      sync.Mutex
	current chan struct{}
}

func newBroadcast() *broadcast { return &broadcast{current: make(chan struct{})} }

func (b *broadcast) changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.current
}

func (b *broadcast) notify() {
	b.mu.Lock()
	close(b.current)
	b.current = make(chan struct{})
	b.mu.Unlock()
}
