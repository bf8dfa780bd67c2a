package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// ClusterSpawnConfig describes a cluster of `palaver serve` processes to
// start on loopback for a run.
type ClusterSpawnConfig struct {
	Binary string // the palaver executable
	Nodes  int    // 3 or 5; every node is a Raft voter
	// Dir holds each node's data directory and log (Dir/node-a/data,
	// Dir/node-a/server.log, ...); it must exist.
	Dir string
	// ExtraArgs are appended to every node's `palaver serve` arguments.
	ExtraArgs []string
	// Pprof gives every node its own --pprof-addr on a free loopback
	// port (SpawnedClusterNode.PprofAddr), for profiling one node of the
	// cluster during a run.
	Pprof bool
	// Timeout bounds the start of the whole cluster, up to one leader and
	// term; default 90 s.
	Timeout  time.Duration
	Progress io.Writer // progress lines; nil for none
	Label    string    // prefix of progress lines
}

// SpawnedClusterNode is one process of a spawned cluster.
type SpawnedClusterNode struct {
	Name                                             string // its --node-name
	IRCAddr, HTTPAddr, RaftAddr, GossipAddr, RPCAddr string
	PprofAddr                                        string // empty unless ClusterSpawnConfig.Pprof
	DataDir, LogPath                                 string
	Server                                           *SpawnedServer
	join                                             string // the --join of its first start
}

// SpawnedCluster is a running cluster of child processes.
type SpawnedCluster struct {
	Nodes []*SpawnedClusterNode
	cfg   ClusterSpawnConfig
}

// portsPerNode counts a node's listeners: IRC, HTTP, Raft, gossip,
// cluster RPC and, when asked for, pprof.
func (cfg ClusterSpawnConfig) portsPerNode() int {
	if cfg.Pprof {
		return 6
	}
	return 5
}

// assignPorts gives n the listen addresses in addrs (portsPerNode of them).
func (cfg ClusterSpawnConfig) assignPorts(n *SpawnedClusterNode, addrs []string) {
	n.IRCAddr, n.HTTPAddr, n.RaftAddr, n.GossipAddr, n.RPCAddr = addrs[0], addrs[1], addrs[2], addrs[3], addrs[4]
	if cfg.Pprof {
		n.PprofAddr = addrs[5]
	}
}

// SpawnCluster starts cfg.Nodes `palaver serve` processes with fresh data
// directories under cfg.Dir and free loopback ports, flood limits and the
// per-IP cap off: the first bootstraps the cluster (and writes its secret
// file), the others --join it with that file (--cluster-secret).
// It returns once every node answers /api/v1/health, all report the
// same term and exactly one leader, and the leader counts every node as a
// voter. On failure it stops what it started.
func SpawnCluster(ctx context.Context, cfg ClusterSpawnConfig) (*SpawnedCluster, error) {
	if cfg.Nodes != 3 && cfg.Nodes != 5 {
		return nil, fmt.Errorf("load: a spawned cluster has 3 or 5 nodes, not %d", cfg.Nodes)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 90 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	per := cfg.portsPerNode()
	addrs, err := FreeLoopbackAddrs(per * cfg.Nodes)
	if err != nil {
		return nil, err
	}
	c := &SpawnedCluster{cfg: cfg}
	for i := range cfg.Nodes {
		name := "node-" + string(rune('a'+i))
		dir := filepath.Join(cfg.Dir, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("load: node directory: %w", err)
		}
		n := &SpawnedClusterNode{Name: name, DataDir: filepath.Join(dir, "data"), LogPath: filepath.Join(dir, "server.log")}
		cfg.assignPorts(n, addrs[i*per:])
		c.Nodes = append(c.Nodes, n)
	}
	out := newLockedWriter(cfg.Progress)
	fail := func(err error) (*SpawnedCluster, error) {
		return nil, errors.Join(err, c.Stop(5*time.Second))
	}
	// The first node bootstraps; the others join it once it serves.
	if err := c.start(ctx, cfg, c.Nodes[0], ""); err != nil {
		return fail(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(c.Nodes))
	for i, n := range c.Nodes[1:] {
		wg.Go(func() { errs[i+1] = c.start(ctx, cfg, n, c.Nodes[0].GossipAddr) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fail(err)
	}
	health, leader, err := WaitClusterSettled(ctx, c.Target().Nodes, cfg.Timeout)
	if err != nil {
		return fail(err)
	}
	if err := WaitVoters(ctx, c.Target().Nodes[leader].HTTPURL, cfg.Nodes); err != nil {
		return fail(err)
	}
	for i, n := range c.Nodes {
		progressf(out, "%s: %s (pid %d) IRC %s HTTP %s: %s, term %d", cfg.Label, n.Name, n.Server.PID(), n.IRCAddr, n.HTTPAddr, health[i].Role, health[i].Term)
		if n.PprofAddr != "" {
			progressf(out, "%s: %s profiles at http://%s/debug/pprof/", cfg.Label, n.Name, n.PprofAddr)
		}
	}
	progressf(out, "%s: cluster up, leader %s, data in %s", cfg.Label, c.Nodes[leader].Name, cfg.Dir)
	return c, nil
}

// start runs one node's process and waits until its IRC and HTTP
// listeners accept connections (a node opens them only after it found a
// leader and caught up). The ports were free when they were picked, but
// another process (a parallel test, another benchmark) can take one before
// the node binds it: a first start that fails on a taken port is tried
// again on new ports, at most three times.
func (c *SpawnedCluster) start(ctx context.Context, cfg ClusterSpawnConfig, n *SpawnedClusterNode, join string) error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = c.startOnce(ctx, cfg, n, join); err == nil || !portTaken(n.LogPath) {
			return err
		}
		addrs, perr := FreeLoopbackAddrs(cfg.portsPerNode())
		if perr != nil {
			return errors.Join(err, perr)
		}
		cfg.assignPorts(n, addrs)
		if rerr := errors.Join(os.RemoveAll(n.DataDir), os.Remove(n.LogPath)); rerr != nil {
			return errors.Join(err, rerr)
		}
	}
	return err
}

// portTaken says whether a node's log shows that it could not bind a port.
func portTaken(logPath string) bool {
	data, err := os.ReadFile(logPath)
	return err == nil && bytes.Contains(data, []byte("address already in use"))
}

func (c *SpawnedCluster) startOnce(ctx context.Context, cfg ClusterSpawnConfig, n *SpawnedClusterNode, join string) error {
	args := []string{"serve",
		"--node-name", n.Name + ".bench", "--server-name", "palaver.bench", "--data", n.DataDir,
		"--irc-addr", n.IRCAddr, "--tls-addr", "", "--http-addr", n.HTTPAddr, "--raft-addr", n.RaftAddr,
		"--gossip-addr", n.GossipAddr, "--cluster-addr", n.RPCAddr, "--max-voters", fmt.Sprint(cfg.Nodes),
		"--no-flood-limits", "--max-conns-per-ip", "-1", "--log-level", "warn",
	}
	if join != "" {
		// The first node created the cluster secret in its data directory: only holders join.
		args = append(args, "--join", join, "--cluster-secret", filepath.Join(c.Nodes[0].DataDir, "cluster", "secret"))
	}
	if n.PprofAddr != "" {
		args = append(args, "--pprof-addr", n.PprofAddr)
	}
	args = append(args, cfg.ExtraArgs...)
	srv, err := Spawn(ctx, SpawnConfig{
		Binary: cfg.Binary, Args: args, LogPath: n.LogPath,
		ReadyAddrs: []string{n.IRCAddr, n.HTTPAddr}, Timeout: cfg.Timeout,
	})
	if err != nil {
		return fmt.Errorf("load: %s: %w", n.Name, err)
	}
	n.Server, n.join = srv, join
	return nil
}

// restart starts a node that was killed again, with the arguments of its
// first start (its data directory holds its Raft state, so it rejoins).
func (c *SpawnedCluster) restart(ctx context.Context, n *SpawnedClusterNode) error {
	if n.Server != nil {
		if !n.Server.Exited() {
			return fmt.Errorf("load: %s is still running", n.Name)
		}
		_ = n.Server.Stop(0) // closes the log of the ended process
	}
	return c.startOnce(ctx, c.cfg, n, n.join) // same ports and data: never re-picked
}

// Target describes the cluster for the scenarios: each node's addresses,
// a Kill that sends SIGKILL to its process and a CPU reader from /proc.
func (c *SpawnedCluster) Target() ClusterTarget {
	t := ClusterTarget{Nodes: make([]ClusterNode, len(c.Nodes))}
	for i, n := range c.Nodes {
		t.Nodes[i] = ClusterNode{
			Name: n.Name, IRCAddr: n.IRCAddr, HTTPURL: "http://" + n.HTTPAddr,
			Kill: func() error {
				if n.Server == nil {
					return fmt.Errorf("load: %s is not running", n.Name)
				}
				return n.Server.Kill()
			},
			Restart: func(ctx context.Context) error { return c.restart(ctx, n) },
			CPU: func() (time.Duration, error) {
				if n.Server == nil {
					return 0, fmt.Errorf("load: %s is not running", n.Name)
				}
				return ReadProcessCPU(n.Server.PID())
			},
		}
	}
	return t
}

// Stop stops every node (SIGTERM, then SIGKILL after grace), in parallel.
// A node already killed is not an error.
func (c *SpawnedCluster) Stop(grace time.Duration) error {
	var wg sync.WaitGroup
	errs := make([]error, len(c.Nodes))
	for i, n := range c.Nodes {
		if n.Server == nil {
			continue
		}
		wg.Go(func() {
			if err := n.Server.Stop(grace); err != nil {
				errs[i] = fmt.Errorf("%s: %w", n.Name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
