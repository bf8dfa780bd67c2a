package load

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/palaver-chat/palaver/testcluster/loopback"
)

// SpawnConfig describes a server process to start for a run.
type SpawnConfig struct {
	Binary     string        // the executable
	Args       []string      // its arguments
	LogPath    string        // its stdout and stderr are appended here
	ReadyAddrs []string      // TCP addresses that must accept connections before the server counts as up
	Timeout    time.Duration // bound on start-up; default 30 s
}

// SpawnedServer is a running child server.
type SpawnedServer struct {
	cmd    *exec.Cmd
	log    *os.File
	exited chan struct{} // closed when the process has been waited for
	err    error         // its exit status, valid once exited is closed
}

// Spawn starts the server and waits until every ReadyAddr accepts a
// connection (or the process exits, or Timeout passes).
func Spawn(ctx context.Context, cfg SpawnConfig) (*SpawnedServer, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	log, err := os.OpenFile(cfg.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("load: server log: %w", err)
	}
	cmd := exec.Command(cfg.Binary, cfg.Args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("load: starting %s: %w", cfg.Binary, err)
	}
	s := &SpawnedServer{cmd: cmd, log: log, exited: make(chan struct{})}
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	readyCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	for _, addr := range cfg.ReadyAddrs {
		if err := s.waitListening(readyCtx, addr); err != nil {
			s.Stop(5 * time.Second)
			return nil, fmt.Errorf("load: server not up (log: %s): %w", cfg.LogPath, err)
		}
	}
	return s, nil
}

// Exited says whether the process has ended.
func (s *SpawnedServer) Exited() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// PID is the server's process id.
func (s *SpawnedServer) PID() int { return s.cmd.Process.Pid }

// waitListening retries a connection to addr until it succeeds.
func (s *SpawnedServer) waitListening(ctx context.Context, addr string) error {
	ticker := time.NewTicker(50 * time.Millisecond)
	defer ticker.Stop()
	var d net.Dialer
	for {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return conn.Close()
		}
		select {
		case <-s.exited:
			return fmt.Errorf("the process exited before listening on %s: %v", addr, s.err)
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %v)", addr, ctx.Err(), err)
		case <-ticker.C:
		}
	}
}

// Stop asks the server to shut down (SIGTERM), kills it if it has not
// exited within grace, and waits for it. A shutdown by SIGTERM or the kill
// is not an error.
func (s *SpawnedServer) Stop(grace time.Duration) error {
	defer s.log.Close()
	select {
	case <-s.exited:
		return s.exitError()
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("load: signalling the server: %w", err)
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-s.exited:
		return s.exitError()
	case <-timer.C:
	}
	if err := s.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("load: killing the server: %w", err)
	}
	<-s.exited
	return nil
}

// Kill ends the server at once with SIGKILL, as a crash would, and waits
// for it. Stop is still needed afterwards, to close the log.
func (s *SpawnedServer) Kill() error {
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("load: killing the server: %w", err)
	}
	<-s.exited
	return nil
}

func (s *SpawnedServer) exitError() error {
	var exit *exec.ExitError
	if errors.As(s.err, &exit) && !exit.Exited() { // ended by a signal
		return nil
	}
	if s.err != nil {
		return fmt.Errorf("load: the server exited: %w", s.err)
	}
	return nil
}

// FreeLoopbackAddrs returns n distinct 127.0.0.1:port addresses that were free when picked,
// below the kernel's ephemeral range (package loopback), so that a busy machine's outgoing
// connections do not take one before the server binds it.
func FreeLoopbackAddrs(n int) ([]string, error) {
	addrs, err := loopback.Addrs(n)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	return addrs, nil
}
