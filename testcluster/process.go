package testcluster

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/palaver-chat/palaver/node"
)

// ProcessOptions run every node as a separate `palaver serve` process.
type ProcessOptions struct {
	Binary string   // the palaver executable (its first argument is the subcommand, "serve")
	Env    []string // added to the inherited environment, NAME=value
	Args   []string // extra `palaver serve` flags
	// UpgradeTo is the executable an upgrade round (FaultUpgrade, Cluster.Upgrade) restarts a
	// node with: the nodes start as Binary (a previous version) and are replaced one by one.
	UpgradeTo string
}

// process is a node running as a `palaver serve` process. Its output goes to <Dir>/<name>.log.
type process struct {
	cmd      *exec.Cmd
	httpURL  string
	debugURL string // the --pprof-addr listener: /debug/palaver/state
	client   *http.Client
	logPath  string
	exited   chan struct{} // closed once the process ended
	waitErr  error         // set before exited closes
}

func (p *process) inProcess() *node.Node { return nil }

// startProcess starts node i as a process and waits until it serves: its HTTP server answers,
// which it does only at the end of node.Start (leader known, state caught up, key registered).
func (c *Cluster) startProcess(ctx context.Context, i int, join []string) (*process, error) {
	a := c.addrs[i]
	args := []string{"serve",
		"--server-name", "palaver.test", "--node-name", a.Name, "--data", a.DataDir,
		"--irc-addr", a.IRC, "--tls-addr=", "--http-addr", a.HTTP, "--raft-addr", a.Raft,
		"--gossip-addr", a.Gossip, "--cluster-addr", a.Cluster, "--pprof-addr", a.Debug,
		"--dead-node-grace", c.opts.DeadNodeGrace.String(), "--raft-profile", c.opts.RaftProfile,
		"--max-conns-per-ip", "-1", "--no-flood-limits", "--log-level", "info",
		"--oper", operName + ":" + operPassword,
	}
	for _, j := range join {
		args = append(args, "--join", j)
	}
	if secret := c.secretFor(join); secret != "" {
		args = append(args, "--cluster-secret", secret)
	}
	args = append(args, c.opts.Processes.Args...)
	logPath := filepath.Join(c.opts.Dir, a.Name+".log")
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("process log: %w", err)
	}
	binary := c.binary(i)
	fmt.Fprintf(logFile, "=== testcluster: %s %s\n", binary, strings.Join(args, " "))
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), c.opts.Processes.Env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("exec %s: %w", binary, err)
	}
	p := &process{cmd: cmd, httpURL: "http://" + a.HTTP, debugURL: "http://" + a.Debug, logPath: logPath,
		client: &http.Client{Timeout: 2 * time.Second}, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	err = poll(ctx, 50*time.Millisecond, func() (bool, error) {
		select {
		case <-p.exited:
			return false, fmt.Errorf("exited (%v) before serving: %s", p.waitErr, lastLines(logPath, 5))
		default:
		}
		return p.role() != "", nil
	})
	if err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// health reads GET /api/v1/health.
func (p *process) health(ctx context.Context) (role string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.httpURL+"/api/v1/health", nil)
	if err != nil {
		return "", err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("health: %s", resp.Status)
	}
	var h struct {
		Role string `json:"role"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return "", fmt.Errorf("health: %w", err)
	}
	return h.Role, nil
}

func (p *process) role() string {
	role, err := p.health(context.Background())
	if err != nil {
		return ""
	}
	return role
}

// state reads the applied index and the state hash from GET /debug/palaver/state.
func (p *process) state(ctx context.Context) (NodeState, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.debugURL+"/debug/palaver/state", nil)
	if err != nil {
		return NodeState{}, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return NodeState{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return NodeState{}, fmt.Errorf("replica state: %s", resp.Status)
	}
	return parseReplicaState(resp.Body)
}

// stop kills the process (kill -9) and waits for it to end.
func (p *process) stop() error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill: %w", err)
	}
	<-p.exited
	return nil
}

// terminate ends the process as a service manager does: SIGTERM, then kill -9 if it has not
// exited within grace. It reports whether the process exited by itself.
func (p *process) terminate(grace time.Duration) (graceful bool, err error) {
	select {
	case <-p.exited:
		return true, nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return false, fmt.Errorf("SIGTERM: %w", err)
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.exited:
		return true, nil
	case <-timer.C:
		return false, p.stop()
	}
}

// parseReplicaState reads a node.ReplicaState answer.
func parseReplicaState(r io.Reader) (NodeState, error) {
	var rs node.ReplicaState
	dec := json.NewDecoder(io.LimitReader(r, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rs); err != nil {
		return NodeState{}, fmt.Errorf("replica state: %w", err)
	}
	st := NodeState{AppliedIndex: rs.AppliedIndex, StateIndex: rs.StateIndex}
	if len(rs.Hash) != hex.EncodedLen(len(st.Hash)) {
		return NodeState{}, fmt.Errorf("replica state: hash %q: want %d hex digits", rs.Hash, hex.EncodedLen(len(st.Hash)))
	}
	if _, err := hex.Decode(st.Hash[:], []byte(rs.Hash)); err != nil {
		return NodeState{}, fmt.Errorf("replica state: hash %q: want %d hex digits", rs.Hash, 2*len(st.Hash))
	}
	return st, nil
}

// lastLines returns the last n lines of a file, for error messages.
func lastLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}
