package raft

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/palaver-chat/palaver/raft/trust"
)

// rpcIdleTimeout closes a server connection that carried no call for this
// long; the client redials.
const rpcIdleTimeout = 5 * time.Minute

// rpcHandler answers one call from peer, the node id in the caller's TLS
// certificate ("" on an in-process link without TLS). A nil response closes
// the connection without an answer (the fault-injection hook uses it).
type rpcHandler func(ctx context.Context, peer string, req *rpcRequest) *rpcResponse

// rpcServer accepts cluster RPC connections and answers their calls.
type rpcServer struct {
	listener net.Listener
	handle   rpcHandler
	logger   *slog.Logger

	ctx    context.Context // cancelled by close: handlers give up
	cancel context.CancelFunc

	// lock tier 9 (leaf)
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newRPCServer(listener net.Listener, handle rpcHandler, logger *slog.Logger) *rpcServer {
	ctx, cancel := context.WithCancel(context.Background())
	return &rpcServer{
		listener: listener,
		handle:   handle,
		logger:   logger,
		ctx:      ctx,
		cancel:   cancel,
		conns:    map[net.Conn]struct{}{},
	}
}

// start runs the accept loop until close.
func (s *rpcServer) start() { s.wg.Go(s.acceptLoop) }

func (s *rpcServer) acceptLoop() {
	retry := newBackoff(5*time.Millisecond, time.Second)
	for {
		conn, err := s.listener.Accept()
		if err != nil {
			if s.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			s.logger.Warn("cluster RPC accept failed", "err", err)
			if retry.wait(s.ctx, nil, time.Time{}) != nil {
				return
			}
			continue
		}
		if !s.track(conn) {
			conn.Close()
			return
		}
		s.wg.Go(func() { s.serve(conn) })
	}
}

func (s *rpcServer) track(conn net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return false
	}
	s.conns[conn] = struct{}{}
	return true
}

func (s *rpcServer) serve(conn net.Conn) {
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
		conn.Close()
	}()
	peer := ""
	if tc, ok := conn.(*tls.Conn); ok {
		state := tc.ConnectionState()
		node, err := trust.PeerNode(&state)
		if err != nil {
			s.logger.Warn("cluster RPC connection without a node identity", "remote", conn.RemoteAddr(), "err", err)
			return
		}
		peer = node
	}
	reader := bufio.NewReader(conn)
	for {
		conn.SetReadDeadline(time.Now().Add(rpcIdleTimeout))
		var req rpcRequest
		if err := readFrame(reader, &req); err != nil {
			if !errors.Is(err, io.EOF) && s.ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				s.logger.Debug("cluster RPC connection dropped", "remote", conn.RemoteAddr(), "err", err)
			}
			return
		}
		conn.SetReadDeadline(time.Time{})
		resp := s.handle(s.ctx, peer, &req)
		if resp == nil {
			return
		}
		if err := writeFrame(conn, resp); err != nil {
			return
		}
	}
}

// close stops accepting, cancels running handlers and closes every
// connection, then waits for the goroutines.
func (s *rpcServer) close() error {
	s.mu.Lock()
	s.cancel()
	for conn := range s.conns {
		conn.Close()
	}
	s.mu.Unlock()
	err := s.listener.Close()
	s.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
