package raft

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sync"
	"time"
)

const (
	// rpcIdlePerAddr is how many idle connections the client keeps per
	// address; more concurrent calls dial more and close the extra ones.
	// Every write made on a follower is one call to the leader, so this is
	// sized for many concurrent writers: at 8, B9's 256 writers spent 8 %
	// of the leader's CPU accepting and closing connections.
	rpcIdlePerAddr = 128
	// rpcDefaultTimeout bounds a call whose context has no deadline.
	rpcDefaultTimeout = 10 * time.Second
)

// rpcClient makes cluster RPC calls, reusing idle connections.
type rpcClient struct {
	dial func(ctx context.Context, addr string) (net.Conn, error)

	// lock tier 9 (leaf)
	mu     sync.Mutex
	idle   map[string][]*rpcConn
	closed bool
}

type rpcConn struct {
	net.Conn
	reader *bufio.Reader
}

func newRPCClient(dial func(ctx context.Context, addr string) (net.Conn, error)) *rpcClient {
	return &rpcClient{dial: dial, idle: map[string][]*rpcConn{}}
}

// call sends req to addr and reads the answer. Transport errors (and
// ctx's) come back as errors; the answer's own error is in the response.
func (c *rpcClient) call(ctx context.Context, addr string, req *rpcRequest) (*rpcResponse, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(rpcDefaultTimeout)
	}
	req.TimeoutMS = max(time.Until(deadline).Milliseconds(), 1)
	conn, err := c.get(ctx, addr)
	if err != nil {
		return nil, err
	}
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	var resp rpcResponse
	err = writeFrame(conn, req)
	if err == nil {
		err = readFrame(conn.reader, &resp)
	}
	if !stop() || err != nil {
		conn.Close()
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("raft: cluster RPC %s to %s: %w", req.Op, addr, ctxErr)
		}
		return nil, fmt.Errorf("raft: cluster RPC %s to %s: %w", req.Op, addr, err)
	}
	conn.SetDeadline(time.Time{})
	c.put(addr, conn)
	return &resp, nil
}

func (c *rpcClient) get(ctx context.Context, addr string) (*rpcConn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	if idle := c.idle[addr]; len(idle) > 0 {
		conn := idle[len(idle)-1]
		c.idle[addr] = idle[:len(idle)-1]
		c.mu.Unlock()
		return conn, nil
	}
	c.mu.Unlock()
	conn, err := c.dial(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("raft: cluster RPC dial %s: %w", addr, err)
	}
	return &rpcConn{Conn: conn, reader: bufio.NewReader(conn)}, nil
}

func (c *rpcClient) put(addr string, conn *rpcConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || len(c.idle[addr]) >= rpcIdlePerAddr {
		conn.Close()
		return
	}
	c.idle[addr] = append(c.idle[addr], conn)
}

// close closes the idle connections; calls after it fail with ErrClosed.
func (c *rpcClient) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for addr, conns := range c.idle {
		for _, conn := range conns {
			conn.Close()
		}
		delete(c.idle, addr)
	}
}
