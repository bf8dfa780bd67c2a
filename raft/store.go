package raft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	hraft "github.com/hashicorp/raft"
)

// Config configures a Store. Zero durations and thresholds take the defaults
// listed beside them.
type Config struct {
	// NodeID is the node's stable name, used as its raft server id.
	NodeID string
	// Dir holds <Dir>/raft-log.db (log and stable store), <Dir>/snapshots
	// and <Dir>/node-id. Unused when InMemory.
	Dir string
	// BindAddr is the raft TCP listen address, e.g. "127.0.0.1:6670";
	// port 0 picks a free port (see Store.Addr). When InMemory it is only
	// the transport's name.
	BindAddr string
	// AdvertiseAddr is the address other nodes dial, when BindAddr is not
	// dialable (0.0.0.0, NAT). Optional.
	AdvertiseAddr string
	// InMemory keeps the log, stable store and snapshots in memory and uses
	// raft's in-memory transport: for tests and in-process clusters.
	InMemory bool
	// Bootstrap makes the node the single voter of a new cluster when it has
	// no raft state yet. With existing state it is ignored.
	Bootstrap bool

	SnapshotThreshold uint64        // entries between snapshots; default 8192
	SnapshotInterval  time.Duration // how often to check the threshold; default 2m

	HeartbeatTimeout   time.Duration // default 500ms
	ElectionTimeout    time.Duration // default 500ms
	LeaderLeaseTimeout time.Duration // default 250ms
	CommitTimeout      time.Duration // default 50ms

	// Logger receives raft's logs; default slog.Default().
	Logger *slog.Logger
	// OnApply, when set, observes how long each successful Propose took,
	// from handing the entry to raft until this node's state machine
	// applied it (feed it to an apply-latency histogram). It is called on
	// the proposing goroutine and must not block.
	OnApply func(d time.Duration)
}

const (
	defaultSnapshotThreshold  = 8192
	defaultSnapshotInterval   = 2 * time.Minute
	defaultHeartbeatTimeout   = 500 * time.Millisecond
	defaultElectionTimeout    = 500 * time.Millisecond
	defaultLeaderLeaseTimeout = 250 * time.Millisecond
	defaultCommitTimeout      = 50 * time.Millisecond
)

func (cfg Config) withDefaults() (Config, error) {
	if cfg.NodeID == "" {
		return cfg, errors.New("raft: config: NodeID is required")
	}
	if !cfg.InMemory {
		if cfg.Dir == "" {
			return cfg, errors.New("raft: config: Dir is required unless InMemory")
		}
		if cfg.BindAddr == "" {
			return cfg, errors.New("raft: config: BindAddr is required unless InMemory")
		}
	}
	setDefault(&cfg.SnapshotThreshold, defaultSnapshotThreshold)
	setDefault(&cfg.SnapshotInterval, defaultSnapshotInterval)
	setDefault(&cfg.HeartbeatTimeout, defaultHeartbeatTimeout)
	setDefault(&cfg.ElectionTimeout, defaultElectionTimeout)
	setDefault(&cfg.LeaderLeaseTimeout, defaultLeaderLeaseTimeout)
	setDefault(&cfg.CommitTimeout, defaultCommitTimeout)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return cfg, nil
}

func setDefault[T comparable](field *T, value T) {
	var zero T
	if *field == zero {
		*field = value
	}
}

func (cfg Config) raftConfig(logger hclog.Logger) *hraft.Config {
	rc := hraft.DefaultConfig()
	rc.LocalID = hraft.ServerID(cfg.NodeID)
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.CommitTimeout = cfg.CommitTimeout
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.SnapshotInterval = cfg.SnapshotInterval
	// Buffer the apply channel so concurrent proposals reach the leader
	// loop together and share one log write.
	rc.BatchApplyCh = true
	rc.NoLegacyTelemetry = true
	rc.Logger = logger
	return rc
}

// Store owns the *raft.Raft of this node, its storage and its transport.
type Store struct {
	cfg       Config
	logger    *slog.Logger
	raft      *hraft.Raft
	fsm       *fsmAdapter
	transport hraft.Transport
	stores    *stores

	leader *leaderWatch

	closing   chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// Open starts raft on the configured storage. With Bootstrap set and no
// existing state it makes this node the single voter of a new cluster;
// otherwise it resumes from its snapshot and log (the state machine is
// restored from the newest snapshot before Open returns; later entries are
// applied once a leader commits, see Barrier). Call WaitForLeader before
// proposing.
func Open(ctx context.Context, cfg Config, sm StateMachine) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("raft: open: %w", err)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger.With("node", cfg.NodeID)
	hlog := newHCLogAdapter(logger)

	st, hasState, err := openStores(cfg, hlog)
	if err != nil {
		return nil, err
	}
	transport, err := openTransport(cfg, hlog.Named("raft-transport"))
	if err != nil {
		st.close()
		return nil, err
	}
	fsm := newFSMAdapter(sm)
	r, err := hraft.NewRaft(cfg.raftConfig(hlog.Named("raft")), fsm, st.logs, st.stable, st.snaps, transport)
	if err != nil {
		closeTransport(transport)
		st.close()
		return nil, fmt.Errorf("raft: start: %w", err)
	}
	s := &Store{
		cfg:       cfg,
		logger:    logger,
		raft:      r,
		fsm:       fsm,
		transport: transport,
		stores:    st,
		closing:   make(chan struct{}),
	}
	s.leader = watchLeader(r)

	if cfg.Bootstrap && !hasState {
		if err := s.bootstrap(ctx); err != nil {
			return nil, errors.Join(err, s.Close())
		}
	}
	logger.Info("raft store open", "addr", s.Addr(), "existing_state", hasState,
		"applied_index", fsm.applied.get(), "in_memory", cfg.InMemory)
	return s, nil
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
	s.logger.Info("raft bootstrapped a single-node cluster", "addr", s.Addr())
	return nil
}

// Addr is the raft transport's address (the bound port when BindAddr asked
// for port 0).
func (s *Store) Addr() string { return string(s.transport.LocalAddr()) }

// Close shuts raft down and releases the transport and storage. Waiting
// calls return ErrClosed. It is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.closing)
		var errs []error
		if err := s.raft.Shutdown().Error(); err != nil {
			errs = append(errs, fmt.Errorf("raft: shutdown: %w", err))
		}
		s.leader.stop()
		s.fsm.applied.close()
		if err := closeTransport(s.transport); err != nil {
			errs = append(errs, fmt.Errorf("raft: close transport: %w", err))
		}
		if err := s.stores.close(); err != nil {
			errs = append(errs, fmt.Errorf("raft: close log store: %w", err))
		}
		s.closeErr = errors.Join(errs...)
		s.logger.Info("raft store closed")
	})
	return s.closeErr
}

func (s *Store) isClosed() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}
