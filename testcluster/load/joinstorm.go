package load

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// JoinStormConfig configures scenario B5: Clients registered clients JOIN
// one channel back to back.
type JoinStormConfig struct {
	Clients          int           // default 5000
	SetupConcurrency int           // connections being registered at once; default 64
	Timeout          time.Duration // bound on one registration and on the whole storm; default 60 s
	// ServerCPU, when set, reads the server's CPU time used so far.
	ServerCPU func() (time.Duration, error)
	Progress  io.Writer // progress lines; nil for none
	Label     string    // prefix of progress lines
}

func (c JoinStormConfig) withDefaults() JoinStormConfig {
	orDefault(&c.Clients, 5000)
	orDefault(&c.SetupConcurrency, 64)
	orDefault(&c.Timeout, 60*time.Second)
	labelOr(&c.Label, "B5")
	return c
}

// JoinStormResult is the outcome of one B5 run.
type JoinStormResult struct {
	Transport Transport `json:"transport"`
	Clients   int       `json:"clients"` // registered before the storm
	// Joined counts the clients that got the end of their NAMES (366);
	// Total is the time from the first JOIN written to the last 366 read,
	// Latency each client's JOIN → 366.
	Joined  int            `json:"joined"`
	Total   time.Duration  `json:"total_ns"`
	Latency LatencySummary `json:"latency"`
	// Killed counts the clients whose connection the server ended during
	// the storm (an ERROR, e.g. a send-queue overflow, or a close).
	Killed      int      `json:"killed"`
	FirstErrors []string `json:"first_errors,omitempty"`
	// Failed counts the clients answered FAIL JOIN (e.g. TEMPORARILY_UNAVAILABLE when the
	// server's proposal deadline passed); FirstFails are the first such lines.
	Failed     int      `json:"failed"`
	FirstFails []string `json:"first_fails,omitempty"`
	// Success is set when every client got its NAMES and none was killed or answered FAIL.
	Success   bool          `json:"success"`
	Lines     int64         `json:"lines"` // lines the clients read during the storm
	ClientCPU time.Duration `json:"client_cpu_ns"`
	ServerCPU time.Duration `json:"server_cpu_ns,omitempty"`
	SetupTime time.Duration `json:"setup_ns"`
}

// stormClient is one joiner.
type stormClient struct {
	conn     lineConn
	joinSent atomic.Int64 // unix ns of its JOIN
	joinedAt atomic.Int64 // unix ns of its 366
	killed   atomic.Bool  // ERROR or a close while held
	errLine  atomic.Value // string: the ERROR line
	failLine atomic.Value // string: the first FAIL JOIN line
	lines    *atomic.Int64
	joined   *atomic.Int64
	done     chan struct{}
}

// RunJoinStorm runs B5: it registers Clients guests (plain NICK/USER), then
// one goroutine writes JOIN on every connection back to back while every
// client keeps reading (each JOIN is announced to the earlier members);
// the run ends when every client has its 366 or Timeout passes. Only
// plain IRC is used.
func RunJoinStorm(ctx context.Context, target Target, cfg JoinStormConfig) (JoinStormResult, error) {
	cfg = cfg.withDefaults()
	d, err := newDialer(target)
	if err != nil {
		return JoinStormResult{}, err
	}
	out := newLockedWriter(cfg.Progress)
	res := JoinStormResult{Transport: d.target.Transport}
	tag := randomTag(4)
	channel := "#storm-" + tag
	var lines, joined atomic.Int64
	clients := make([]*stormClient, cfg.Clients)
	setupStart := time.Now()
	err = forEachLimited(ctx, cfg.Clients, cfg.SetupConcurrency, func(i int) error {
		sctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
		conn, err := d.dial(sctx)
		if err != nil {
			return fmt.Errorf("client %d: %w", i, err)
		}
		if _, err := registerPlain(sctx, conn, "j"+tag+strconv.Itoa(i)); err != nil {
			conn.close()
			return fmt.Errorf("client %d: %w", i, err)
		}
		c := &stormClient{conn: conn, lines: &lines, joined: &joined, done: make(chan struct{})}
		clients[i] = c
		go c.readLoop()
		return nil
	})
	defer releaseStorm(clients)
	if err != nil {
		return res, err
	}
	res.Clients, res.SetupTime = cfg.Clients, time.Since(setupStart)
	progressf(out, "%s: %d clients registered in %.1fs; joining %s", cfg.Label, cfg.Clients, res.SetupTime.Seconds(), channel)

	ph, err := startPhase(out, cfg.ServerCPU, func(el time.Duration) string {
		return fmt.Sprintf("%s: %.0fs %d/%d joined, %d lines read", cfg.Label, el.Seconds(), joined.Load(), cfg.Clients, lines.Load())
	})
	if err != nil {
		return res, err
	}
	start := time.Now()
	for _, c := range clients {
		c.joinSent.Store(time.Now().UnixNano())
		wctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		if err := c.conn.writeLines(wctx, "JOIN "+channel); err != nil {
			c.killed.Store(true)
		}
		cancel()
	}
	waitFor(ctx, cfg.Timeout, func() bool {
		n := joined.Load()
		for _, c := range clients { // a kill or a FAIL JOIN ends a client's wait: the run failed
			if (c.killed.Load() || c.failLine.Load() != nil) && c.joinedAt.Load() == 0 {
				n++
			}
		}
		return n >= int64(cfg.Clients)
	})
	totals, err := ph.end()
	if err != nil {
		return res, err
	}
	res.ClientCPU, res.ServerCPU, res.Lines = totals.ClientCPU, totals.ServerCPU, lines.Load()
	var lat []time.Duration
	var last int64
	for _, c := range clients {
		if at := c.joinedAt.Load(); at != 0 {
			lat = append(lat, time.Duration(at-c.joinSent.Load()))
			last = max(last, at)
		}
		if c.killed.Load() {
			res.Killed++
			if s, _ := c.errLine.Load().(string); s != "" && len(res.FirstErrors) < maxFirstErrors {
				res.FirstErrors = append(res.FirstErrors, s)
			}
		}
		if s, _ := c.failLine.Load().(string); s != "" {
			res.Failed++
			if len(res.FirstFails) < maxFirstErrors {
				res.FirstFails = append(res.FirstFails, s)
			}
		}
	}
	res.Joined, res.Latency = len(lat), SummarizeLatencies(lat)
	res.Success = res.Joined == cfg.Clients && res.Killed == 0 && res.Failed == 0
	if last != 0 {
		res.Total = time.Duration(last - start.UnixNano())
	}
	progressf(out, "%s: %d/%d joined in %.2fs, JOIN → NAMES p50 %s p99 %s, %d killed, %d FAIL JOIN, %d lines read",
		cfg.Label, res.Joined, cfg.Clients, res.Total.Seconds(), res.Latency.P50.Round(time.Millisecond), res.Latency.P99.Round(time.Millisecond), res.Killed, res.Failed, res.Lines)
	return res, ctx.Err()
}

// readLoop counts lines, notes the 366 and answers PINGs until the
// connection ends; an end it did not ask for counts as a kill.
func (c *stormClient) readLoop() {
	defer close(c.done)
	ctx := context.Background() // no deadline: closing the connection ends the loop
	for {
		line, err := c.conn.readLine(ctx)
		if err != nil {
			if c.errLine.Load() == nil {
				c.killed.Store(true)
				c.errLine.Store("closed: " + err.Error())
			}
			return
		}
		c.lines.Add(1)
		switch {
		case strings.Contains(line, " 366 "):
			if c.joinedAt.CompareAndSwap(0, time.Now().UnixNano()) {
				c.joined.Add(1)
			}
		case strings.Contains(line, "FAIL JOIN "):
			c.failLine.CompareAndSwap(nil, truncate(line, 200))
		case strings.HasPrefix(line, "ERROR"):
			c.errLine.Store(truncate(line, 200))
			c.killed.Store(true)
		case strings.Contains(line, "PING"):
			if m, err := ircmsg.Parse(line); err == nil && m.Command == "PING" {
				if c.conn.writeLines(ctx, pong(m)) != nil {
					return
				}
			}
		}
	}
}

// releaseStorm ends the run: the QUITs are the clients' own ends, not
// kills.
func releaseStorm(clients []*stormClient) {
	var conns []lineConn
	var dones []chan struct{}
	for _, c := range clients {
		if c != nil {
			c.errLine.CompareAndSwap(nil, "")
			conns, dones = append(conns, c.conn), append(dones, c.done)
		}
	}
	quitAll(conns, dones)
}
