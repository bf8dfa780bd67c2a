package node

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the event store's driver, for VACUUM INTO

	"github.com/palaver-chat/palaver/raft"
)

// A backup archive (`palaver backup`) is a gzipped tar of:
//
//	raft/snapshot   a snapshot of the replicated state taken for the backup (raft.BackupSnapshot)
//	events.db       the message store, copied by SQLite's VACUUM INTO in one read transaction
//	media/...       the encrypted uploads this node holds
//	keys/...        the node's server key, and cluster/secret: only with --with-keys
//	MANIFEST.json   last: the format, node, version, time, the snapshot's index, term and
//	                configuration, and the size and SHA-256 of every file above
//
// Each part is consistent in itself; they are not taken at one instant (the state machine and
// the message store are separate planes anyway: messages are never in the Raft log). RestoreArchive
// checks every checksum before it writes a data directory.

// BackupFormat names the archive format in its manifest.
const BackupFormat = "palaver-backup/1"

const manifestName = "MANIFEST.json"

// Manifest describes a backup archive.
type Manifest struct {
	Format   string            `json:"format"`
	Created  time.Time         `json:"created"`
	Node     string            `json:"node"`
	Version  string            `json:"version"`
	Raft     raft.SnapshotInfo `json:"raft"`
	WithKeys bool              `json:"with_keys"`
	Files    []ManifestFile    `json:"files"`
}

// ManifestFile is one file of the archive.
type ManifestFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// backups writes the archives the operator plane asks this node for.
type backups struct {
	cfg  Config
	raft *raft.Store
	log  *slog.Logger
}

// write writes a backup archive to a new file in the data directory and returns its path.
func (b backups) write(ctx context.Context, withKeys bool) (string, error) {
	f, err := os.CreateTemp(b.cfg.DataDir, ".backup-*.tar.gz")
	if err != nil {
		return "", fmt.Errorf("backup: %w", err)
	}
	err = b.archive(ctx, f, withKeys)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("backup: %w", err)
	}
	b.log.Info("backup archive written", "with_keys", withKeys)
	return f.Name(), nil
}

// archiveWriter adds files to the tar and records them for the manifest.
type archiveWriter struct {
	tw       *tar.Writer
	manifest *Manifest
}

func (a *archiveWriter) add(name string, size int64, r io.Reader) error {
	if err := a.tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size, ModTime: time.Now().UTC(), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	sum := sha256.New()
	written, err := io.Copy(a.tw, io.TeeReader(r, sum))
	if err != nil {
		return fmt.Errorf("archive %s: %w", name, err)
	}
	if written != size {
		return fmt.Errorf("archive %s: %d bytes, expected %d", name, written, size)
	}
	a.manifest.Files = append(a.manifest.Files, ManifestFile{Path: name, Size: size, SHA256: hex.EncodeToString(sum.Sum(nil))})
	return nil
}

func (a *archiveWriter) addFile(name, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	return a.add(name, info.Size(), f)
}

// addTree adds every regular file under dir as prefix/<relative path>; a missing dir adds nothing.
func (a *archiveWriter) addTree(prefix, dir string) error {
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		return a.addFile(path.Join(prefix, filepath.ToSlash(rel)), p)
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

func (b backups) archive(ctx context.Context, w io.Writer, withKeys bool) error {
	gz := gzip.NewWriter(w)
	a := &archiveWriter{tw: tar.NewWriter(gz), manifest: &Manifest{Format: BackupFormat, Created: time.Now().UTC(),
		Node: b.cfg.NodeName, Version: b.cfg.Version, WithKeys: withKeys}}

	info, snap, err := b.raft.BackupSnapshot()
	if err != nil {
		return err
	}
	err = a.add("raft/snapshot", info.Size, snap)
	snap.Close()
	if err != nil {
		return err
	}
	a.manifest.Raft = info

	copyPath, err := b.copyEventStore(ctx)
	if err != nil {
		return err
	}
	err = a.addFile("events.db", copyPath)
	os.Remove(copyPath)
	if err != nil {
		return err
	}
	if err := a.addTree("media", filepath.Join(b.cfg.DataDir, "media")); err != nil {
		return fmt.Errorf("media: %w", err)
	}
	if withKeys {
		if err := a.addTree("keys", filepath.Join(b.cfg.DataDir, "keys")); err != nil {
			return fmt.Errorf("keys: %w", err)
		}
		if err := a.addTree("cluster", filepath.Join(b.cfg.DataDir, "cluster")); err != nil {
			return fmt.Errorf("cluster secret: %w", err)
		}
	}
	manifest, err := json.MarshalIndent(a.manifest, "", "  ")
	if err != nil {
		return err
	}
	if err := a.tw.WriteHeader(&tar.Header{Name: manifestName, Mode: 0o600, Size: int64(len(manifest)), ModTime: time.Now().UTC(), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := a.tw.Write(manifest); err != nil {
		return err
	}
	if err := a.tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// copyEventStore copies the message store with SQLite's VACUUM INTO on a connection of its own:
// one read transaction, so the copy is the store at one commit, while the node keeps writing.
func (b backups) copyEventStore(ctx context.Context) (string, error) {
	f, err := os.CreateTemp(b.cfg.DataDir, ".backup-events-*.db")
	if err != nil {
		return "", err
	}
	dst := f.Name()
	f.Close()
	os.Remove(dst) // VACUUM INTO refuses an existing file
	src := filepath.Join(b.cfg.DataDir, "events.db")
	db, err := sql.Open("sqlite", "file:"+src+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return "", fmt.Errorf("open the message store: %w", err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", dst); err != nil {
		os.Remove(dst)
		return "", fmt.Errorf("copy the message store: %w", err)
	}
	return dst, nil
}

// RestoreOptions says how RestoreArchive builds a data directory.
type RestoreOptions struct {
	// NewCluster makes the node the only voter of a new cluster at RaftAddr (restoring a whole
	// cluster: the others join it fresh); otherwise it keeps the archive's cluster id and
	// configuration and returns into its running cluster.
	NewCluster bool
	RaftAddr   string
}

// RestoreArchive checks an archive's manifest and checksums and builds the data directory dir
// (which must not exist or be empty) from it. It returns the manifest.
func RestoreArchive(archive io.Reader, dir string, opts RestoreOptions) (*Manifest, error) {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("restore: %s is not empty", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	staging, err := os.MkdirTemp(dir, ".restore-")
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	defer os.RemoveAll(staging)
	m, err := unpack(archive, staging)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	snapshot, err := os.Open(filepath.Join(staging, "raft", "snapshot"))
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	defer snapshot.Close()
	if err := raft.RestoreDir(filepath.Join(dir, "raft"), m.Raft, snapshot, opts.NewCluster, opts.RaftAddr); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	for _, f := range m.Files {
		if f.Path == "raft/snapshot" {
			continue
		}
		target := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
			return nil, fmt.Errorf("restore: %w", err)
		}
		if err := os.Rename(filepath.Join(staging, filepath.FromSlash(f.Path)), target); err != nil {
			return nil, fmt.Errorf("restore: %w", err)
		}
	}
	return m, nil
}

// maxManifest bounds the manifest read.
const maxManifest = 16 << 20

// unpack extracts the archive into dir and checks it against its manifest: the same files, each
// of its size and SHA-256, and nothing else.
func unpack(archive io.Reader, dir string) (*Manifest, error) {
	gz, err := gzip.NewReader(archive)
	if err != nil {
		return nil, fmt.Errorf("not a backup archive: %w", err)
	}
	tr := tar.NewReader(gz)
	type seen struct {
		size int64
		sum  string
	}
	files := map[string]seen{}
	var manifest *Manifest
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read the archive: %w", err)
		}
		if manifest != nil {
			return nil, fmt.Errorf("archive: %s after the manifest", h.Name)
		}
		if h.Name == manifestName {
			data, err := io.ReadAll(io.LimitReader(tr, maxManifest))
			if err != nil {
				return nil, fmt.Errorf("read the manifest: %w", err)
			}
			manifest = &Manifest{}
			if err := json.Unmarshal(data, manifest); err != nil {
				return nil, fmt.Errorf("manifest: %w", err)
			}
			continue
		}
		name := path.Clean(h.Name)
		if h.Typeflag != tar.TypeReg || !fs.ValidPath(name) || name != h.Name || strings.HasPrefix(name, ".") {
			return nil, fmt.Errorf("archive: unexpected entry %q", h.Name)
		}
		if _, dup := files[name]; dup {
			return nil, fmt.Errorf("archive: %s twice", name)
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
			return nil, err
		}
		size, sum, err := writeHashed(target, tr, sha256.New())
		if err != nil {
			return nil, err
		}
		files[name] = seen{size, sum}
	}
	switch {
	case manifest == nil:
		return nil, errors.New("archive: no manifest (truncated?)")
	case manifest.Format != BackupFormat:
		return nil, fmt.Errorf("archive: format %q, this version reads %q", manifest.Format, BackupFormat)
	case len(manifest.Files) != len(files):
		return nil, fmt.Errorf("archive: %d files, the manifest lists %d", len(files), len(manifest.Files))
	}
	for _, f := range manifest.Files {
		got, ok := files[f.Path]
		if !ok {
			return nil, fmt.Errorf("archive: %s is missing", f.Path)
		}
		if got.size != f.Size || got.sum != f.SHA256 {
			return nil, fmt.Errorf("archive: %s does not match its checksum", f.Path)
		}
	}
	if _, ok := files["raft/snapshot"]; !ok {
		return nil, errors.New("archive: no raft snapshot")
	}
	return manifest, nil
}

func writeHashed(target string, r io.Reader, sum hash.Hash) (int64, string, error) {
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, "", err
	}
	n, err := io.Copy(f, io.TeeReader(r, sum))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, "", fmt.Errorf("write %s: %w", target, err)
	}
	return n, hex.EncodeToString(sum.Sum(nil)), nil
}
