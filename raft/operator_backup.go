package raft

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	hraft "github.com/hashicorp/raft"
)

// Backups. The operator call "backup" has this node write an archive (the node layer builds it:
// SetBackup) to a temporary file, then sends an operatorResponse with its size followed by that
// many raw bytes on the same connection. The raft part of the archive is a snapshot of the state
// machine taken for it (BackupSnapshot); RestoreDir turns one back into a raft directory.

const operatorBackup = "backup"

// SnapshotServer is one server of the configuration a snapshot holds.
type SnapshotServer struct {
	ID       string `json:"id"`
	Address  string `json:"address"`
	Suffrage string `json:"suffrage"` // voter or nonvoter
}

// SnapshotInfo describes a snapshot: the index and term of the last entry it covers and the
// raft configuration at that point.
type SnapshotInfo struct {
	Index              uint64           `json:"index"`
	Term               uint64           `json:"term"`
	Size               int64            `json:"size"`
	Configuration      []SnapshotServer `json:"configuration"`
	ConfigurationIndex uint64           `json:"configuration_index"`
	ClusterID          string           `json:"cluster_id"`
	NodeID             string           `json:"node_id"`
}

// backupHook is the node layer's archive writer.
type backupHook = func(ctx context.Context, withKeys bool) (path string, err error)

// SetBackup sets how this node writes a backup archive for the operator: f writes it to a new
// file and returns its path; the file is removed once sent.
func (s *Store) SetBackup(f func(ctx context.Context, withKeys bool) (string, error)) {
	h := backupHook(f)
	s.operator.backup.Store(&h)
}

// BackupSnapshot takes a snapshot of the state machine now (or, when nothing was applied since
// the newest, opens that one) and returns its description and contents; close the reader.
func (s *Store) BackupSnapshot() (SnapshotInfo, io.ReadCloser, error) {
	future := s.raft.Snapshot()
	var meta *hraft.SnapshotMeta
	var rc io.ReadCloser
	err := future.Error()
	switch {
	case err == nil:
		meta, rc, err = future.Open()
	case errors.Is(err, hraft.ErrNothingNewToSnapshot):
		var metas []*hraft.SnapshotMeta
		if metas, err = s.stores.snaps.List(); err == nil && len(metas) == 0 {
			err = errors.New("no snapshot")
		}
		if err == nil {
			meta, rc, err = s.stores.snaps.Open(metas[0].ID)
		}
	}
	if err != nil {
		return SnapshotInfo{}, nil, fmt.Errorf("raft: snapshot for a backup: %w", err)
	}
	info := SnapshotInfo{Index: meta.Index, Term: meta.Term, Size: meta.Size, ConfigurationIndex: meta.ConfigurationIndex,
		ClusterID: s.ClusterID(), NodeID: s.cfg.NodeID}
	for _, srv := range meta.Configuration.Servers {
		suffrage := "voter"
		if srv.Suffrage != hraft.Voter {
			suffrage = "nonvoter"
		}
		info.Configuration = append(info.Configuration, SnapshotServer{ID: string(srv.ID), Address: string(srv.Address), Suffrage: suffrage})
	}
	return info, rc, nil
}

// RestoreDir makes dir (a node's raft directory, which must hold no raft state) start from a
// snapshot: the node id file, the snapshot with info's index, term and configuration, and the
// cluster id (none: the node adopts a new one at its first start, as a cluster of its own).
// With newCluster the configuration is replaced by this node alone as a voter at raftAddr, so it
// elects itself and the others join it; otherwise info's configuration is kept, for a node that
// returns into its running cluster.
func RestoreDir(dir string, info SnapshotInfo, data io.Reader, newCluster bool, raftAddr string) error {
	if info.NodeID == "" || info.Index == 0 {
		return errors.New("raft: restore: the snapshot names no node or index")
	}
	if _, err := os.Stat(filepath.Join(dir, logFileName)); err == nil {
		return fmt.Errorf("raft: restore: %s already holds raft state", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("raft: restore: %w", err)
	}
	if err := claimNodeID(dir, info.NodeID, false); err != nil {
		return err
	}
	st, err := openDiskStores(dir, hclog.NewNullLogger())
	if err != nil {
		return err
	}
	defer st.close()
	var configuration hraft.Configuration
	if newCluster {
		if raftAddr == "" {
			return errors.New("raft: restore: a new cluster needs the raft address the node will serve at")
		}
		configuration.Servers = []hraft.Server{{ID: hraft.ServerID(info.NodeID), Address: hraft.ServerAddress(raftAddr), Suffrage: hraft.Voter}}
	} else {
		for _, srv := range info.Configuration {
			suffrage := hraft.Voter
			if srv.Suffrage != "voter" {
				suffrage = hraft.Nonvoter
			}
			configuration.Servers = append(configuration.Servers, hraft.Server{ID: hraft.ServerID(srv.ID), Address: hraft.ServerAddress(srv.Address), Suffrage: suffrage})
		}
		if info.ClusterID != "" {
			if err := writeClusterID(st.stable, info.ClusterID); err != nil {
				return err
			}
		}
	}
	_, trans := hraft.NewInmemTransport("")
	sink, err := st.snaps.Create(hraft.SnapshotVersionMax, info.Index, info.Term, configuration, info.ConfigurationIndex, trans)
	if err != nil {
		return fmt.Errorf("raft: restore: create snapshot: %w", err)
	}
	if _, err := io.Copy(sink, data); err != nil {
		sink.Cancel()
		return fmt.Errorf("raft: restore: write snapshot: %w", err)
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("raft: restore: close snapshot: %w", err)
	}
	// raft starts a term after the snapshot's, and votes for no one yet.
	if err := st.stable.SetUint64([]byte("CurrentTerm"), info.Term); err != nil {
		return fmt.Errorf("raft: restore: term: %w", err)
	}
	return nil
}

// serveBackup answers a backup call: the archive's size in a frame, then its bytes.
func (s *Store) serveBackup(ctx context.Context, conn io.Writer, req *operatorRequest) error {
	hook := s.operator.backup.Load()
	if hook == nil {
		return writeFrame(conn, &operatorResponse{Code: codeBadRequest, Error: "this node does not make backups"})
	}
	path, err := (*hook)(ctx, req.WithKeys)
	if err != nil {
		return writeFrame(conn, &operatorResponse{Code: codeFailed, Error: err.Error()})
	}
	defer os.Remove(path)
	f, err := os.Open(path)
	if err != nil {
		return writeFrame(conn, &operatorResponse{Code: codeFailed, Error: err.Error()})
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return writeFrame(conn, &operatorResponse{Code: codeFailed, Error: err.Error()})
	}
	if err := writeFrame(conn, &operatorResponse{Size: info.Size()}); err != nil {
		return err
	}
	_, err = io.Copy(conn, f)
	return err
}

// Backup has the node write a backup archive and copies it to w; with withKeys the archive holds
// the node's private keys too. It returns the archive's size.
func (c *OperatorClient) Backup(ctx context.Context, withKeys bool, w io.Writer) (int64, error) {
	resp, err := c.call(ctx, &operatorRequest{Op: operatorBackup, WithKeys: withKeys})
	if err != nil {
		return 0, err
	}
	n, err := io.CopyN(w, c.reader, resp.Size)
	if err != nil {
		return n, fmt.Errorf("raft: operator backup: received %d of %d bytes: %w", n, resp.Size, err)
	}
	return n, nil
}
