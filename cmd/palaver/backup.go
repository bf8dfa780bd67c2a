package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/palaver-chat/palaver/node"
)

const backupUsage = `Usage: palaver backup --out FILE [flags]

Ask a running node (its --cluster-addr) for a backup archive: a snapshot of the replicated state
at a known Raft index, its message store (SQLite, copied in one read transaction), its media and,
only with --with-keys, its private keys and the cluster secret. The archive ends with a manifest
of every file's SHA-256. Restore it with palaver restore.

Flags (each also PALAVER_<NAME> in the environment):
`

const restoreUsage = `Usage: palaver restore --in FILE --data-dir DIR [--new-cluster --raft-addr ADDR]

Check a backup archive's manifest and checksums and build a node's data directory from it (DIR
must not exist or be empty). Without --new-cluster the node keeps its cluster id and Raft
configuration: start it with its old flags and it returns into its running cluster, catching up
the replicated state from the leader and the messages after the backup from its peers. With
--new-cluster it becomes the only voter of a new cluster at --raft-addr (restoring a whole
cluster: start it, then start the other nodes with empty data directories and --join).

Flags:
`

// runBackup runs `palaver backup`.
func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "archive `FILE` to write (must not exist)")
	addr := fs.String("addr", "127.0.0.1:6672", "cluster listener `HOST:PORT` of the node to back up (its --cluster-addr)")
	secret := fs.String("cluster-secret", "", "the cluster secret `FILE`")
	withKeys := fs.Bool("with-keys", false, "include the node's private keys and the cluster secret (keep the archive as safe as the node)")
	timeout := fs.Duration("timeout", time.Hour, "give up after this long")
	fs.Usage = func() { fmt.Fprint(fs.Output(), backupUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := applyEnv(fs); err != nil || fs.NArg() != 0 || *out == "" {
		fs.Usage()
		return 2
	}
	if *secret == "" {
		fmt.Fprintln(stderr, "palaver backup: refused: no credentials: --cluster-secret FILE (or PALAVER_CLUSTER_SECRET) names the cluster secret file")
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := backup(ctx, *addr, *secret, *out, *withKeys, stdout); err != nil {
		fmt.Fprintf(stderr, "palaver backup: %v\n", err)
		return 1
	}
	return 0
}

func backup(ctx context.Context, addr, secretPath, out string, withKeys bool, stdout io.Writer) error {
	client, err := dialOperator(ctx, addr, secretPath)
	if err != nil {
		return err
	}
	defer client.Close()
	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
	if err != nil {
		return err
	}
	n, err := client.Backup(ctx, withKeys, f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = linkNew(f.Name(), out)
	}
	os.Remove(f.Name())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%d bytes) from %s\n", out, n, client.Node())
	return nil
}

// linkNew puts the finished file at path, refusing to replace an existing one.
func linkNew(tmp, path string) error {
	if err := os.Link(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// runRestore runs `palaver restore`.
func runRestore(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	in := fs.String("in", "", "backup archive `FILE`")
	dir := fs.String("data-dir", "", "data `DIR` to build (must not exist or be empty)")
	newCluster := fs.Bool("new-cluster", false, "make the node the only voter of a new cluster (restore a whole cluster from this archive)")
	raftAddr := fs.String("raft-addr", "", "with --new-cluster: the --raft-addr (or --raft-advertise) the node will serve at")
	fs.Usage = func() { fmt.Fprint(fs.Output(), restoreUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 0 || *in == "" || *dir == "" || (*newCluster && *raftAddr == "") {
		fs.Usage()
		return 2
	}
	f, err := os.Open(*in)
	if err != nil {
		fmt.Fprintf(stderr, "palaver restore: %v\n", err)
		return 1
	}
	defer f.Close()
	m, err := node.RestoreArchive(f, *dir, node.RestoreOptions{NewCluster: *newCluster, RaftAddr: *raftAddr})
	if err != nil {
		fmt.Fprintf(stderr, "palaver restore: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "restored node %s into %s: raft index %d (term %d), %d files, taken %s by version %s\n",
		m.Node, *dir, m.Raft.Index, m.Raft.Term, len(m.Files), m.Created.Format(time.RFC3339), m.Version)
	if !m.WithKeys {
		fmt.Fprintln(stdout, "the archive holds no keys: the node makes a new server key at its first start")
	}
	return 0
}
