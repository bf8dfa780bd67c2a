package raft

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	hraft "github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

const (
	logFileName       = "raft-log.db"
	nodeIDFileName    = "node-id"
	snapshotsRetained = 2
	// logCacheEntries keeps the newest entries in memory so that replication
	// and FSM application rarely read them back from bolt.
	logCacheEntries = 512
	// boltOpenTimeout bounds the wait for bolt's file lock, which another
	// process using the same directory would hold forever.
	boltOpenTimeout = 2 * time.Second
	tcpMaxPool      = 3
	tcpIOTimeout    = 10 * time.Second
)

// stores is what hashicorp/raft persists, and how to release it.
type stores struct {
	logs   hraft.LogStore
	stable hraft.StableStore
	snaps  hraft.SnapshotStore
	close  func() error
}

func openMemoryStores() *stores {
	mem := hraft.NewInmemStore()
	return &stores{
		logs:   mem,
		stable: mem,
		snaps:  hraft.NewInmemSnapshotStore(),
		close:  func() error { return nil },
	}
}

// openDiskStores opens <dir>/raft-log.db (log and stable store) and
// <dir>/snapshots (file snapshot store).
func openDiskStores(dir string, logger hclog.Logger) (*stores, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("raft: create data dir %s: %w", dir, err)
	}
	logPath := filepath.Join(dir, logFileName)
	bolt, err := raftboltdb.New(raftboltdb.Options{
		Path:        logPath,
		BoltOptions: &bbolt.Options{Timeout: boltOpenTimeout},
	})
	if err != nil {
		if errors.Is(err, bbolt.ErrTimeout) {
			return nil, fmt.Errorf("raft: open %s: locked, is another palaver using this data dir? %w", logPath, err)
		}
		return nil, fmt.Errorf("raft: open %s: %w", logPath, err)
	}
	cached, err := hraft.NewLogCache(logCacheEntries, bolt)
	if err != nil {
		bolt.Close()
		return nil, fmt.Errorf("raft: log cache: %w", err)
	}
	// The file snapshot store adds the "snapshots" directory itself.
	snaps, err := hraft.NewFileSnapshotStoreWithLogger(dir, snapshotsRetained, logger)
	if err != nil {
		bolt.Close()
		return nil, fmt.Errorf("raft: open snapshot store in %s: %w", dir, err)
	}
	return &stores{logs: cached, stable: bolt, snaps: snaps, close: bolt.Close}, nil
}

// claimNodeID makes sure dir belongs to nodeID. The first start records the
// id in <dir>/node-id before any raft state exists, so raft state without
// that file, or with another id in it, was not written by this node.
func claimNodeID(dir, nodeID string, hasState bool) error {
	path := filepath.Join(dir, nodeIDFileName)
	recorded, err := os.ReadFile(path)
	switch {
	case err == nil:
		if got := string(bytes.TrimSpace(recorded)); got != nodeID {
			return fmt.Errorf("%w: %s holds node id %q, this node is %q; use that id or another data dir",
				ErrNodeIDMismatch, dir, got, nodeID)
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("raft: read %s: %w", path, err)
	case hasState:
		return fmt.Errorf("%w: %s has raft state but no %s file, so its owner is unknown",
			ErrNodeIDMismatch, dir, nodeIDFileName)
	}
	return writeFileSynced(path, []byte(nodeID+"\n"))
}

// writeFileSynced writes through a temporary file and a rename, so a crash
// leaves either no file or the whole one.
func writeFileSynced(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("raft: create %s: %w", tmp, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("raft: write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("raft: rename %s: %w", tmp, err)
	}
	if dir, err := os.Open(filepath.Dir(path)); err == nil {
		dir.Sync()
		dir.Close()
	}
	return nil
}

// openTransport chooses the raft transport: connected through the
// in-memory network, in memory and alone (also an unclustered node on disk:
// it has no peers, so it opens no port), or mutual TLS over TCP. It returns
// the transport and how to release it.
func openTransport(cfg Config, guard *connGuard, allow func(string, net.Addr) error, logger hclog.Logger) (hraft.Transport, func() error, error) {
	if cfg.Network != nil || cfg.InMemory || !cfg.clustered() {
		addr := cfg.AdvertiseAddr
		if addr == "" {
			addr = cfg.BindAddr
		}
		if addr == "" {
			addr = cfg.NodeID
		}
		if cfg.Network != nil {
			transport, err := cfg.Network.openRaftTransport(cfg.NodeID, addr)
			if err != nil {
				return nil, nil, err
			}
			return transport, func() error { cfg.Network.closeRaftTransport(addr); return nil }, nil
		}
		_, transport := hraft.NewInmemTransport(hraft.ServerAddress(addr))
		return transport, transport.Close, nil
	}
	var advertise net.Addr
	if cfg.AdvertiseAddr != "" {
		resolved, err := net.ResolveTCPAddr("tcp", cfg.AdvertiseAddr)
		if err != nil {
			return nil, nil, fmt.Errorf("raft: resolve advertise address %q: %w", cfg.AdvertiseAddr, err)
		}
		advertise = resolved
	}
	stream, err := newTLSStreamLayer(cfg.BindAddr, advertise, cfg.Identity, guard)
	if err != nil {
		return nil, nil, fmt.Errorf("raft: listen on %s: %w", cfg.BindAddr, err)
	}
	stream.allow = allow
	transport := hraft.NewNetworkTransportWithConfig(&hraft.NetworkTransportConfig{
		Stream:  stream,
		MaxPool: tcpMaxPool,
		Timeout: tcpIOTimeout,
		Logger:  logger,
	})
	gated := &gatedTransport{NetworkTransport: transport}
	return gated, gated.Close, nil
}

// gatedTransport is raft's TCP transport with a gate in front of its
// heartbeat fast path. The transport runs heartbeats on its connection
// goroutines, straight into raft, which may then write the stable store;
// raft's Shutdown does not wait for them, so one could write to a store
// that Close has already closed (raft panics on that). Close shuts the gate
// and waits for running heartbeats first. Embedding keeps every optional
// interface of *NetworkTransport (pre-vote, close, ...).
type gatedTransport struct {
	*hraft.NetworkTransport
	// lock tier 1: read-held while hashicorp/raft takes an RPC (which may wait for its apply loop)
	mu     sync.RWMutex
	closed bool
}

var (
	_ hraft.WithClose   = (*gatedTransport)(nil)
	_ hraft.WithPreVote = (*gatedTransport)(nil)
)

func (t *gatedTransport) SetHeartbeatHandler(handler func(rpc hraft.RPC)) {
	if handler == nil {
		t.NetworkTransport.SetHeartbeatHandler(nil)
		return
	}
	t.NetworkTransport.SetHeartbeatHandler(func(rpc hraft.RPC) {
		t.mu.RLock()
		defer t.mu.RUnlock()
		if t.closed {
			rpc.Respond(nil, ErrClosed)
			return
		}
		handler(rpc)
	})
}

// Close waits for running heartbeats, refuses later ones and closes the
// transport.
func (t *gatedTransport) Close() error {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	return t.NetworkTransport.Close()
}
