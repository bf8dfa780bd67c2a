package irc

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// keepalive pings connections that have been silent for PingAfter and closes those that then stay
// silent for PingTimeout. One ticker serves all of a server's connections: a timer per connection
// would cost every idle connection about 150 bytes, and resetting it on every input line a lock
// and a timer-heap update, where recording the time of the last input is one atomic store.
type keepalive struct {
	start time.Time // the monotonic clock's origin for the recorded times
	// lock tier 9 (leaf): pings and closes after releasing it
	mu    sync.Mutex
	conns map[*client]struct{}
}

// clientKeepalive is a connection's keepalive state.
type clientKeepalive struct {
	lastInput atomic.Int64 // keepalive clock (ns) of the last input line
	pingedAt  int64        // keepalive clock of the unanswered PING, 0 if none; the sweeper's own
}

func newKeepalive() *keepalive {
	return &keepalive{start: time.Now(), conns: map[*client]struct{}{}}
}

func (k *keepalive) now() int64 { return int64(time.Since(k.start)) }

func (k *keepalive) add(c *client) {
	c.alive.lastInput.Store(k.now())
	k.mu.Lock()
	k.conns[c] = struct{}{}
	k.mu.Unlock()
}

func (k *keepalive) remove(c *client) {
	k.mu.Lock()
	delete(k.conns, c)
	k.mu.Unlock()
}

// touch records input on c.
func (k *keepalive) touch(c *client) { c.alive.lastInput.Store(k.now()) }

// run sweeps the connections every tick until ctx ends; a tick is a quarter of the shorter of the
// two intervals, at most a second.
func (k *keepalive) run(ctx context.Context, pingAfter, pingTimeout time.Duration) {
	tick := min(pingAfter, pingTimeout, 4*time.Second) / 4
	t := time.NewTicker(max(tick, time.Millisecond))
	defer t.Stop()
	var ping, expire []*client
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ping, expire = k.sweep(k.now(), int64(pingAfter), int64(pingTimeout), ping[:0], expire[:0])
		for _, c := range ping {
			c.q.enqueue(c.line("", "PING", c.s.cfg.ServerName))
		}
		for _, c := range expire {
			c.closeWith("Ping timeout", c.line("", "ERROR", "Closing Link: "+c.host+" (Ping timeout)"))
		}
		clear(ping)
		clear(expire)
	}
}

// sweep returns the connections to ping now and those whose PING went unanswered for too long
// (which it stops tracking).
func (k *keepalive) sweep(now, pingAfter, pingTimeout int64, ping, expire []*client) ([]*client, []*client) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for c := range k.conns {
		ka := &c.alive
		last := ka.lastInput.Load()
		switch {
		case ka.pingedAt != 0 && last < ka.pingedAt && now-ka.pingedAt >= pingTimeout:
			expire = append(expire, c)
			delete(k.conns, c)
		case ka.pingedAt != 0 && last < ka.pingedAt:
			// Pinged, waiting for an answer.
		case now-last >= pingAfter:
			ka.pingedAt = max(now, 1)
			ping = append(ping, c)
		default:
			ka.pingedAt = 0
		}
	}
	return ping, expire
}
