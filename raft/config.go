package raft

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hashicorp/go-hclog"
	hraft "github.com/hashicorp/raft"

	"github.com/palaver-chat/palaver/raft/trust"
)

// Config configures a Store. Timing has no defaults (take a Profile); other zero durations and
// thresholds take the defaults listed beside them.
type Config struct {
	// NodeID is the node's stable name: its raft server id and its
	// memberlist name, unique in the cluster.
	NodeID string
	// Dir holds <Dir>/raft-log.db (log and stable store), <Dir>/snapshots
	// and <Dir>/node-id. Unused when InMemory.
	Dir string
	// BindAddr is the raft TCP listen address, e.g. "127.0.0.1:6670";
	// port 0 picks a free port (see Store.Addr). With InMemory or Network it
	// is only the transport's name (default: NodeID).
	BindAddr string
	// AdvertiseAddr is the address other nodes dial, when BindAddr is not
	// dialable (0.0.0.0, NAT). Optional.
	AdvertiseAddr string
	// InMemory keeps the log, stable store and snapshots in memory: for
	// tests and in-process clusters. Without Network it also uses an
	// unconnected in-memory raft transport (a lone node).
	InMemory bool
	// Network, when set, replaces every transport (raft, gossip, cluster
	// RPC) with in-process ones wired through it, so several stores of one
	// process form a cluster; storage still follows InMemory and Dir.
	Network *InmemNetwork
	// Bootstrap makes the node the single voter of a new cluster when it
	// has no raft state yet and Join is empty. With existing state it is
	// ignored.
	Bootstrap bool

	// GossipAddr is the memberlist bind address, e.g. "127.0.0.1:6671"
	// (port 0 picks one). Setting it (or Network) makes the node clustered:
	// it gossips, serves the cluster RPC and forwards proposals. With
	// Network it is an optional fixed in-process address (an IP and port).
	GossipAddr string
	// GossipAdvertise is the gossip address other nodes use, when
	// GossipAddr is not dialable. Optional.
	GossipAdvertise string
	// ClusterAddr is the cluster RPC listen address (forwarded proposals
	// and read-index requests), e.g. "127.0.0.1:6672"; required with
	// GossipAddr unless Network is set.
	ClusterAddr string
	// ClusterAdvertise is the cluster RPC address other nodes dial, when
	// ClusterAddr is not dialable. Optional.
	ClusterAdvertise string
	// Identity is this node's identity in its cluster (raft/trust): raft, the cluster RPC and
	// the cluster's HTTP plane run over mutual TLS with its certificate, and gossip is encrypted
	// and authenticated with its gossip keys. Required when clustered over TCP; optional with
	// Network (nil: the in-process links stay in the clear).
	Identity *trust.Identity
	// NodeKeys, with an Identity, pins each node to its key (pins.go): nil accepts any
	// certificate of the cluster's CAs for any node name.
	NodeKeys NodeKeys
	// Join lists gossip addresses of any cluster members. Empty: bootstrap
	// (when Bootstrap) or restart alone. A node without raft state must
	// reach one of them within JoinTimeout.
	Join []string
	// JoinTimeout bounds the first join of a node without state; default 10s.
	JoinTimeout time.Duration
	// Meta is gossiped with the node (HTTP, IRC, cluster addresses, did...):
	// opaque here, returned in Members. Its encoding, with the addresses
	// this package adds, must fit memberlist's 512 bytes.
	Meta map[string]string
	// FeatureLevel is the highest feature level this node's state machine applies (raft/fsm.Level),
	// gossiped with the node. EntryLevel, when set, is the level an entry needs
	// (raft/fsm.EntryLevel): Propose refuses an entry above the lowest level of the servers of the
	// configuration with ErrClusterUpgrading, so that a server of an earlier version never
	// receives an entry it cannot apply. Nil: every entry is level 0.
	FeatureLevel int
	EntryLevel   func(entry []byte) int
	// MaxVoters is the number of raft voters the leader keeps: 3 (default)
	// or 5. Further nodes join as non-voters.
	MaxVoters int
	// DeadNodeGrace is how long a member stays dead (or unknown to gossip)
	// before the leader removes it from the raft configuration; default 60s.
	DeadNodeGrace time.Duration
	// StabilizationTime is how long a non-voter must stay healthy (answering
	// the cluster RPC, following the leader, caught up) before the leader
	// promotes it to voter; default 2s. See promote.go.
	StabilizationTime time.Duration
	// OnNodeRemoved is called on the leader after it removed a dead node
	// from the raft configuration, so the caller can propose a purge of the
	// node's sessions. It runs on the reconcile goroutine; it may propose.
	OnNodeRemoved func(nodeID string)

	SnapshotThreshold uint64        // entries between snapshots; default 8192
	SnapshotInterval  time.Duration // how often to check the threshold; default 2m

	// Timing is the heartbeat, election, lease and commit timeouts: required, usually a
	// Profile (see timing.go).
	Timing

	// Logger receives raft's and memberlist's logs; default slog.Default().
	Logger *slog.Logger
	// OnApply, when set, observes how long each successful Propose took,
	// from handing the entry to raft (or forwarding it) until this node's
	// state machine applied it (feed it to an apply-latency histogram). It
	// is called on the proposing goroutine and must not block.
	OnApply func(d time.Duration)
	// LogWriteDelay, when set, is asked before every raft log write and
	// delays it by the answer: a slow disk injected by fault tests. Nil (the
	// default) leaves the log store unwrapped.
	LogWriteDelay func() time.Duration
}

const (
	defaultSnapshotThreshold = 8192
	defaultSnapshotInterval  = 2 * time.Minute
	defaultJoinTimeout       = 10 * time.Second
	defaultMaxVoters         = 3
	defaultDeadNodeGrace     = 60 * time.Second
	defaultStabilizationTime = 2 * time.Second
)

// clustered reports whether the node gossips and serves the cluster RPC.
func (cfg Config) clustered() bool { return cfg.Network != nil || cfg.GossipAddr != "" }

func (cfg Config) withDefaults() (Config, error) {
	if cfg.NodeID == "" {
		return cfg, errors.New("raft: config: NodeID is required")
	}
	if !cfg.InMemory && cfg.Dir == "" {
		return cfg, errors.New("raft: config: Dir is required unless InMemory")
	}
	if !cfg.InMemory && cfg.Network == nil && cfg.BindAddr == "" {
		return cfg, errors.New("raft: config: BindAddr is required unless InMemory or Network")
	}
	if cfg.Network == nil {
		switch {
		case len(cfg.Join) > 0 && cfg.GossipAddr == "":
			return cfg, errors.New("raft: config: Join needs GossipAddr (or Network)")
		case cfg.GossipAddr != "" && cfg.InMemory:
			return cfg, errors.New("raft: config: a clustered InMemory store needs Network: an unconnected in-memory raft transport cannot reach other nodes")
		case cfg.GossipAddr != "" && cfg.ClusterAddr == "":
			return cfg, errors.New("raft: config: GossipAddr needs ClusterAddr for forwarded proposals")
		case cfg.GossipAddr != "" && cfg.Identity == nil:
			return cfg, errors.New("raft: config: a clustered node needs Identity: the cluster planes face a network and accept only the cluster's own nodes")
		}
	}
	if cfg.Identity != nil && cfg.Identity.NodeID() != cfg.NodeID {
		return cfg, fmt.Errorf("raft: config: the identity names node %q, this node is %q", cfg.Identity.NodeID(), cfg.NodeID)
	}
	switch cfg.MaxVoters {
	case 0:
		cfg.MaxVoters = defaultMaxVoters
	case 3, 5:
	default:
		return cfg, fmt.Errorf("raft: config: MaxVoters %d: use 3 or 5 (an even count tolerates no more failures than one fewer)", cfg.MaxVoters)
	}
	if cfg.DeadNodeGrace < 0 || cfg.JoinTimeout < 0 || cfg.StabilizationTime < 0 {
		return cfg, errors.New("raft: config: DeadNodeGrace, JoinTimeout and StabilizationTime must not be negative")
	}
	setDefault(&cfg.StabilizationTime, defaultStabilizationTime)
	setDefault(&cfg.DeadNodeGrace, defaultDeadNodeGrace)
	setDefault(&cfg.JoinTimeout, defaultJoinTimeout)
	setDefault(&cfg.SnapshotThreshold, defaultSnapshotThreshold)
	setDefault(&cfg.SnapshotInterval, defaultSnapshotInterval)
	if err := cfg.Timing.Validate(); err != nil {
		return cfg, fmt.Errorf("raft: config: %w", err)
	}
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

// reconcileInterval is how often the leader re-checks membership besides
// reacting to gossip events: often enough to notice a grace period ending.
func (cfg Config) reconcileInterval() time.Duration {
	return min(max(cfg.DeadNodeGrace/4, 20*time.Millisecond), 2*time.Second)
}

// promotionRecheck is how soon the leader looks again at a non-voter that
// is healthy but not yet stable.
func (cfg Config) promotionRecheck() time.Duration {
	return min(max(cfg.StabilizationTime/4, 20*time.Millisecond), cfg.reconcileInterval())
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
	// A node removed while partitioned keeps running so that the leader
	// can add it back when it returns, instead of needing a restart.
	rc.ShutdownOnRemove = false
	rc.Logger = logger
	return rc
}
