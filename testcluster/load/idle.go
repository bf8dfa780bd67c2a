package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// IdleConfig configures scenario B1: many idle registered clients, each a
// member of one small channel.
type IdleConfig struct {
	Clients          int           // connections to hold
	ChannelSize      int           // members per channel; default 10
	SetupConcurrency int           // connections being set up at once; default 64
	SetupTimeout     time.Duration // bound on one connection's registration and JOIN; default 30 s
	Settle           SettleOptions // when the server's RSS counts as settled
	// RSS reads the server's resident set size in KiB (ReadRSS of its
	// PID); required.
	RSS      func() (int64, error)
	Progress io.Writer // progress lines; nil for none
	Label    string    // prefix of progress lines
}

func (c IdleConfig) withDefaults() IdleConfig {
	if c.ChannelSize <= 0 {
		c.ChannelSize = 10
	}
	if c.SetupConcurrency <= 0 {
		c.SetupConcurrency = 64
	}
	if c.SetupTimeout <= 0 {
		c.SetupTimeout = 30 * time.Second
	}
	if c.Label == "" {
		c.Label = "B1"
	}
	return c
}

// IdleResult is the outcome of one B1 run.
type IdleResult struct {
	Transport       Transport     `json:"transport"`
	Clients         int           `json:"clients"`           // asked for
	Held            int           `json:"held"`              // registered, joined and still open when the RSS was read
	SetupFailed     int           `json:"setup_failed"`      // connections that never got registered and joined
	Dropped         int           `json:"dropped"`           // closed after setup, before the measurement
	RSSBeforeKB     int64         `json:"rss_before_kb"`     // server RSS before the first connection
	RSSAfterKB      int64         `json:"rss_after_kb"`      // server RSS with the clients held, once settled
	Settled         bool          `json:"settled"`           // false: the RSS was still rising at the deadline
	KBPerConnection float64       `json:"kb_per_connection"` // (after − before) / held
	SetupTime       time.Duration `json:"setup_ns"`          // from the first connect to the last JOIN answered
	SettleTime      time.Duration `json:"settle_ns"`         // waiting for the RSS to settle
	ClientCPU       time.Duration `json:"client_cpu_ns"`     // this process's CPU over setup and settling
	FirstError      string        `json:"first_error,omitempty"`
}

// idleClient is one held connection.
type idleClient struct {
	conn lineConn
	done chan struct{} // closed when its hold loop ends
}

// RunIdle runs scenario B1: it reads the server's RSS, connects
// cfg.Clients clients (NICK/USER, wait for 001, JOIN its channel, wait for
// 366), waits until the server's RSS stops rising and reports the growth
// per held connection. Every client answers PINGs while it is held; at the
// end each sends QUIT and waits for the server to close, so the TIME_WAIT
// sockets stay on the server's side. Only plain IRC is used.
func RunIdle(ctx context.Context, target Target, cfg IdleConfig) (IdleResult, error) {
	cfg = cfg.withDefaults()
	if cfg.Clients <= 0 {
		return IdleResult{}, errors.New("load: B1 needs at least one client")
	}
	if cfg.RSS == nil {
		return IdleResult{}, errors.New("load: B1 needs a way to read the server's RSS")
	}
	d, err := newDialer(target)
	if err != nil {
		return IdleResult{}, err
	}
	out := newLockedWriter(cfg.Progress)
	res := IdleResult{Transport: d.target.Transport, Clients: cfg.Clients}

	before, err := WaitRSSSettled(ctx, cfg.RSS, cfg.Settle)
	if err != nil {
		return res, fmt.Errorf("load: server RSS before connecting: %w", err)
	}
	res.RSSBeforeKB = before.KB
	progressf(out, "%s: server RSS before: %d KB", cfg.Label, before.KB)

	cpuStart, err := ProcessCPU()
	if err != nil {
		return res, err
	}
	holdCtx, stopHolding := context.WithCancel(ctx)
	defer stopHolding()
	var live atomic.Int64
	clients := make([]*idleClient, cfg.Clients)
	setupStart := time.Now()
	failed, firstErr := setupIdleClients(ctx, holdCtx, d, cfg, clients, &live, out)
	res.SetupTime = time.Since(setupStart)
	res.SetupFailed = failed
	if firstErr != nil {
		res.FirstError = firstErr.Error()
	}
	defer releaseIdleClients(clients)
	if err := ctx.Err(); err != nil {
		return res, err
	}
	progressf(out, "%s: %d/%d connected in %.1fs, %d failed; waiting for the server RSS to settle",
		cfg.Label, live.Load(), cfg.Clients, res.SetupTime.Seconds(), failed)

	after, err := WaitRSSSettled(ctx, cfg.RSS, cfg.Settle)
	if err != nil {
		return res, fmt.Errorf("load: server RSS with the clients connected: %w", err)
	}
	res.Held = int(live.Load())
	res.Dropped = cfg.Clients - failed - res.Held
	res.RSSAfterKB, res.Settled, res.SettleTime = after.KB, after.Settled, after.Waited
	if res.Held > 0 {
		res.KBPerConnection = float64(after.KB-before.KB) / float64(res.Held)
	}
	cpuEnd, err := ProcessCPU()
	if err != nil {
		return res, err
	}
	res.ClientCPU = cpuEnd - cpuStart
	progressf(out, "%s: server RSS after: %d KB (settled: %t), %d held, %.2f KB/connection",
		cfg.Label, after.KB, after.Settled, res.Held, res.KBPerConnection)
	return res, nil
}

// setupIdleClients connects the clients with cfg.SetupConcurrency workers,
// filling clients[i] for each success and starting its hold loop under
// holdCtx. It returns the number of failures and the first error.
func setupIdleClients(ctx, holdCtx context.Context, d *dialer, cfg IdleConfig, clients []*idleClient, live *atomic.Int64, out io.Writer) (int, error) {
	tag := randomTag(4)
	var next, failed atomic.Int64
	var errOnce sync.Once
	var firstErr error
	stopProgress := startProgress(out, progressInterval, func() string {
		return fmt.Sprintf("%s: %d/%d connected, %d failed", cfg.Label, live.Load(), cfg.Clients, failed.Load())
	})
	defer stopProgress()
	var wg sync.WaitGroup
	for range min(cfg.SetupConcurrency, cfg.Clients) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= cfg.Clients || ctx.Err() != nil {
					return
				}
				nick := "b1" + tag + strconv.Itoa(i)
				channel := "#b1-" + tag + "-" + strconv.Itoa(i/cfg.ChannelSize)
				c, err := setupIdleClient(ctx, d, nick, channel, cfg.SetupTimeout)
				if err != nil {
					failed.Add(1)
					errOnce.Do(func() { firstErr = fmt.Errorf("client %d: %w", i, err) })
					continue
				}
				clients[i] = c
				live.Add(1)
				go func() {
					defer close(c.done)
					defer live.Add(-1)
					holdIdle(holdCtx, c.conn)
				}()
			}
		})
	}
	wg.Wait()
	return int(failed.Load()), firstErr
}

// setupIdleClient registers with NICK/USER and joins channel.
func setupIdleClient(ctx context.Context, d *dialer, nick, channel string, timeout time.Duration) (*idleClient, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := d.dial(ctx)
	if err != nil {
		return nil, err
	}
	if err := registerAndJoin(ctx, conn, nick, channel); err != nil {
		conn.close()
		return nil, err
	}
	return &idleClient{conn: conn, done: make(chan struct{})}, nil
}

func registerAndJoin(ctx context.Context, conn lineConn, nick, channel string) error {
	if err := conn.writeLines(ctx, "NICK "+nick, "USER "+nick+" 0 * :"+nick); err != nil {
		return err
	}
	if _, err := readUntil(ctx, conn, registrationFailures, isCommand("001")); err != nil {
		return fmt.Errorf("registering as %s: %w", nick, err)
	}
	if err := conn.writeLines(ctx, "JOIN "+channel); err != nil {
		return err
	}
	if _, err := readUntil(ctx, conn, joinFailures, isCommand("366")); err != nil {
		return fmt.Errorf("joining %s: %w", channel, err)
	}
	return nil
}

// holdIdle keeps a connection open, answering PINGs, until the server
// closes it or ctx ends (which closes it). It reads past ERROR up to the
// close, so that after QUIT the server closes first.
func holdIdle(ctx context.Context, conn lineConn) {
	stop := context.AfterFunc(ctx, func() { conn.close() })
	defer stop()
	readCtx := context.WithoutCancel(ctx) // no deadline: an idle client waits as long as it is held
	for {
		line, err := conn.readLine(readCtx)
		if err != nil {
			return
		}
		if !strings.Contains(line, "PING") {
			continue
		}
		if msg, err := ircmsg.Parse(line); err == nil && msg.Command == "PING" {
			if err := conn.writeLines(readCtx, pong(msg)); err != nil {
				return
			}
		}
	}
}

// quitWait bounds how long the teardown waits for the server to close the
// connections after QUIT before closing them itself.
const quitWait = 15 * time.Second

// releaseIdleClients sends QUIT on every held connection, waits (bounded)
// for the server to close them, then closes whatever is left.
func releaseIdleClients(clients []*idleClient) {
	ctx, cancel := context.WithTimeout(context.Background(), quitWait)
	defer cancel()
	for _, c := range clients {
		if c != nil {
			_ = c.conn.writeLines(ctx, "QUIT :benchmark done")
		}
	}
	for _, c := range clients {
		if c == nil {
			continue
		}
		select {
		case <-c.done:
		case <-ctx.Done():
		}
		c.conn.close()
	}
	for _, c := range clients {
		if c != nil {
			<-c.done
		}
	}
}
