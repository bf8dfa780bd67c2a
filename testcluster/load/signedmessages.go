package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// SignedMessagesConfig configures scenario B6: Channels channels of
// ChannelSize members; in each, one sender signs every PRIVMSG with a
// session key registered by MSGSIG and the other members only read.
type SignedMessagesConfig struct {
	Channels    int           // default 10
	ChannelSize int           // members per channel, the sender included; default 10
	Window      int           // signed messages in flight per sender; default 32
	Duration    time.Duration // how long the senders send; default 10 s
	BodyBytes   int           // message text length; default 100
	// SetupConcurrency is how many clients are set up at once; default 16.
	SetupConcurrency int
	// Timeout bounds one client's setup, the answer to one message and
	// the final drain; default 10 s.
	Timeout time.Duration
	// ServerCPU, when set, reads the server's CPU time used so far.
	ServerCPU func() (time.Duration, error)
	Progress  io.Writer // progress lines; nil for none
	Label     string    // prefix of progress lines
}

func (c SignedMessagesConfig) withDefaults() SignedMessagesConfig {
	if c.Channels <= 0 {
		c.Channels = 10
	}
	if c.ChannelSize <= 0 {
		c.ChannelSize = 10
	}
	if c.Window <= 0 {
		c.Window = 32
	}
	if c.Duration <= 0 {
		c.Duration = 10 * time.Second
	}
	if c.BodyBytes <= 0 {
		c.BodyBytes = 100
	}
	if c.SetupConcurrency <= 0 {
		c.SetupConcurrency = 16
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Label == "" {
		c.Label = "B6"
	}
	return c
}

// SignedMessagesResult is the outcome of one B6 run.
type SignedMessagesResult struct {
	Transport   Transport `json:"transport"`
	Channels    int       `json:"channels"`
	ChannelSize int       `json:"channel_size"`
	Window      int       `json:"window"`
	// Sent counts signed PRIVMSGs written; each is Accepted (echoed with
	// its msgid and signature), Rejected (FAIL or a refusal numeric) or
	// Unanswered (a timeout or a lost connection).
	Sent              int            `json:"sent"`
	Accepted          int            `json:"accepted"`
	Rejected          int            `json:"rejected"`
	Rejections        map[string]int `json:"rejections,omitempty"` // by reason, e.g. "FAIL SIGNATURE_INVALID"
	FirstRejections   []string       `json:"first_rejections,omitempty"`
	Unanswered        int            `json:"unanswered"`
	StreamErrors      []string       `json:"stream_errors,omitempty"` // what ended a sender early
	Elapsed           time.Duration  `json:"elapsed_ns"`              // from the first send to the last answer
	AcceptedPerSecond float64        `json:"accepted_per_second"`
	Latency           LatencySummary `json:"latency"` // send → echo of the accepted messages
	// Delivered counts the PRIVMSGs the readers received; Expected is
	// Accepted times the readers of each channel that answered the final
	// PING (ReadersSynced of Readers).
	Delivered     int64 `json:"delivered"`
	Expected      int64 `json:"expected_deliveries"`
	Readers       int   `json:"readers"`
	ReadersSynced int   `json:"readers_synced"`
	// ClientCPU is this process's CPU over the sending phase; SigningTime
	// the part of it the senders spent minting msgids, building canonical
	// documents and signing (wall time inside that code).
	ClientCPU   time.Duration `json:"client_cpu_ns"`
	SigningTime time.Duration `json:"signing_ns"`
	ServerCPU   time.Duration `json:"server_cpu_ns,omitempty"`
	SetupTime   time.Duration `json:"setup_ns"`
}

// drainReader is a channel member that reads and counts what it is sent.
type drainReader struct {
	conn     lineConn
	privmsgs atomic.Int64
	synced   chan struct{} // receives once the sync PONG arrives
	done     chan struct{} // closed when its read loop ends
}

const syncToken = "b6-sync"

// RunSignedMessages runs scenario B6. Setup: per channel a sender logs in
// with SASL (an ed25519 did:key), registers a fresh session key with
// MSGSIG and joins; then ChannelSize−1 readers register (message-tags,
// server-time, account-tag) and join. For Duration every sender signs and
// sends PRIVMSGs with Window in flight, each counted accepted when its
// echo returns carrying its msgid and signature; then the senders wait
// for the outstanding answers and every reader answers a PING, after
// which its delivery count is final. Every client then QUITs.
func RunSignedMessages(ctx context.Context, target Target, cfg SignedMessagesConfig) (SignedMessagesResult, error) {
	cfg = cfg.withDefaults()
	if cfg.ChannelSize < 1 {
		return SignedMessagesResult{}, errors.New("load: B6 needs channels of at least one member")
	}
	d, err := newDialer(target)
	if err != nil {
		return SignedMessagesResult{}, err
	}
	out := newLockedWriter(cfg.Progress)
	res := SignedMessagesResult{Transport: d.target.Transport, Channels: cfg.Channels, ChannelSize: cfg.ChannelSize, Window: cfg.Window}

	setupStart := time.Now()
	senders, readers, err := setupSignedChannels(ctx, d, cfg)
	defer releaseSignedChannels(senders, readers)
	if err != nil {
		return res, err
	}
	res.SetupTime = time.Since(setupStart)
	res.Readers = cfg.Channels * (cfg.ChannelSize - 1)
	progressf(out, "%s: %d senders and %d readers set up in %.1fs", cfg.Label, len(senders), res.Readers, res.SetupTime.Seconds())

	serverCPU := cfg.ServerCPU
	if serverCPU == nil {
		serverCPU = func() (time.Duration, error) { return 0, nil }
	}
	cpuStart, err := ProcessCPU()
	if err != nil {
		return res, err
	}
	serverCPUStart, err := serverCPU()
	if err != nil {
		return res, err
	}
	var accepted atomic.Int64
	stop := make(chan struct{})
	start := time.Now()
	stopTimer := time.AfterFunc(cfg.Duration, func() { close(stop) })
	defer stopTimer.Stop()
	stopProgress := startProgress(out, progressInterval, func() string {
		el := time.Since(start).Seconds()
		n := accepted.Load()
		return fmt.Sprintf("%s: %.0fs %d accepted (%.0f/s)", cfg.Label, el, n, float64(n)/el)
	})
	results := make([]streamResult, len(senders))
	var wg sync.WaitGroup
	for i, s := range senders {
		wg.Go(func() {
			results[i] = s.stream(ctx, streamOptions{
				window: cfg.Window, stop: stop, timeout: cfg.Timeout, counter: &accepted,
				body: benchBody("b6 "+strconv.Itoa(i)+" ", cfg.BodyBytes),
			})
		})
	}
	wg.Wait()
	stopProgress()
	cpuEnd, err := ProcessCPU()
	if err != nil {
		return res, err
	}
	serverCPUEnd, err := serverCPU()
	if err != nil {
		return res, err
	}
	res.ClientCPU, res.ServerCPU = cpuEnd-cpuStart, serverCPUEnd-serverCPUStart
	res.mergeStreams(results, start)
	res.countDeliveries(ctx, readers, results, cfg)
	progressf(out, "%s: %d accepted in %.2fs = %.0f/s, p50 %s p99 %s, %d rejected, %d unanswered, %d/%d delivered",
		cfg.Label, res.Accepted, res.Elapsed.Seconds(), res.AcceptedPerSecond,
		res.Latency.P50.Round(time.Microsecond), res.Latency.P99.Round(time.Microsecond),
		res.Rejected, res.Unanswered, res.Delivered, res.Expected)
	return res, ctx.Err()
}

func (r *SignedMessagesResult) mergeStreams(results []streamResult, start time.Time) {
	var all []time.Duration
	var last time.Time
	r.Rejections = map[string]int{}
	for _, s := range results {
		r.Sent += s.sent
		r.Accepted += s.accepted
		r.Unanswered += s.unanswered
		r.SigningTime += s.signTime
		all = append(all, s.latencies...)
		for k, n := range s.rejections {
			r.Rejections[k] += n
			r.Rejected += n
		}
		for _, line := range s.firstRejections {
			if len(r.FirstRejections) < maxFirstErrors {
				r.FirstRejections = append(r.FirstRejections, line)
			}
		}
		if s.err != nil && len(r.StreamErrors) < maxFirstErrors {
			r.StreamErrors = append(r.StreamErrors, s.err.Error())
		}
		if s.lastAnswer.After(last) {
			last = s.lastAnswer
		}
	}
	if len(r.Rejections) == 0 {
		r.Rejections = nil
	}
	r.Latency = SummarizeLatencies(all)
	if !last.IsZero() {
		r.Elapsed = last.Sub(start)
	}
	if r.Elapsed > 0 {
		r.AcceptedPerSecond = float64(r.Accepted) / r.Elapsed.Seconds()
	}
}

// countDeliveries has every reader answer a PING (its PONG is queued
// after every message delivered before the senders' last echoes) and
// sums what the synced readers received.
func (r *SignedMessagesResult) countDeliveries(ctx context.Context, readers [][]*drainReader, results []streamResult, cfg SignedMessagesConfig) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	for _, channel := range readers {
		for _, rd := range channel {
			_ = rd.conn.writeLines(ctx, "PING :"+syncToken)
		}
	}
	for c, channel := range readers {
		for _, rd := range channel {
			select {
			case <-rd.synced:
			case <-rd.done: // the connection ended; it may have synced first
				select {
				case <-rd.synced:
				default:
					continue
				}
			case <-ctx.Done():
				continue
			}
			r.ReadersSynced++
			r.Delivered += rd.privmsgs.Load()
			r.Expected += int64(results[c].accepted)
		}
	}
}

// setupSignedChannels sets up the senders (one per channel, first, so each
// creates its channel) and then the readers, SetupConcurrency at a time.
// It returns what it set up even when it fails, for release.
func setupSignedChannels(ctx context.Context, d *dialer, cfg SignedMessagesConfig) ([]*signingSender, [][]*drainReader, error) {
	tag := randomTag(4)
	channel := func(i int) string { return "#b6-" + tag + "-" + strconv.Itoa(i) }
	signers, err := GenerateSigners(CurveEd25519, cfg.Channels)
	if err != nil {
		return nil, nil, err
	}
	senders := make([]*signingSender, cfg.Channels)
	err = forEachLimited(ctx, cfg.Channels, cfg.SetupConcurrency, func(i int) error {
		id := &identity{signer: signers[i], did: signers[i].DID()}
		s, err := setupSigningSender(ctx, d, id, "b6s"+tag+strconv.Itoa(i), channel(i), cfg.Timeout)
		if err != nil {
			return fmt.Errorf("sender %d: %w", i, err)
		}
		senders[i] = s
		return nil
	})
	readers := make([][]*drainReader, cfg.Channels)
	for i := range readers {
		readers[i] = make([]*drainReader, cfg.ChannelSize-1)
	}
	if err != nil {
		return senders, readers, err
	}
	perChannel := cfg.ChannelSize - 1
	err = forEachLimited(ctx, cfg.Channels*perChannel, cfg.SetupConcurrency, func(i int) error {
		c, k := i/perChannel, i%perChannel
		rd, err := setupDrainReader(ctx, d, "b6r"+tag+strconv.Itoa(i), channel(c), cfg.Timeout)
		if err != nil {
			return fmt.Errorf("reader %d of channel %d: %w", k, c, err)
		}
		readers[c][k] = rd
		return nil
	})
	return senders, readers, err
}

// forEachLimited calls f(0..n−1) with at most limit calls at once and
// returns the first error; after an error it starts no further calls.
func forEachLimited(ctx context.Context, n, limit int, f func(i int) error) error {
	var next atomic.Int64
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for range min(limit, n) {
		wg.Go(func() {
			for {
				mu.Lock()
				failed := first != nil
				mu.Unlock()
				i := int(next.Add(1) - 1)
				if i >= n || failed || ctx.Err() != nil {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// setupDrainReader registers with the tag capabilities, joins channel and
// starts the read loop.
func setupDrainReader(ctx context.Context, d *dialer, nick, channel string, timeout time.Duration) (*drainReader, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := d.dial(ctx)
	if err != nil {
		return nil, err
	}
	if err := registerWithCapsAndJoin(ctx, conn, nick, channel); err != nil {
		conn.close()
		return nil, err
	}
	rd := &drainReader{conn: conn, synced: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(rd.done)
		rd.drain()
	}()
	return rd, nil
}

// registerWithCapsAndJoin asks for the tag capabilities, registers with
// NICK/USER and joins channel. The capabilities are not required: a CAP
// NAK still registers, the lines then carry fewer tags.
func registerWithCapsAndJoin(ctx context.Context, conn lineConn, nick, channel string) error {
	if err := conn.writeLines(ctx, "CAP REQ :message-tags server-time account-tag", "NICK "+nick, "USER "+nick+" 0 * :"+nick, "CAP END"); err != nil {
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

// drain reads until the connection ends, counting PRIVMSGs, answering
// PINGs and signalling the sync PONG.
func (rd *drainReader) drain() {
	ctx := context.Background() // no deadline: the connection is closed to end the loop
	for {
		line, err := rd.conn.readLine(ctx)
		if err != nil {
			return
		}
		if strings.Contains(line, " PRIVMSG ") {
			rd.privmsgs.Add(1)
			continue
		}
		if !strings.Contains(line, "PING") && !strings.Contains(line, "PONG") {
			continue
		}
		msg, err := ircmsg.Parse(line)
		switch {
		case err != nil:
		case msg.Command == "PING":
			if err := rd.conn.writeLines(ctx, pong(msg)); err != nil {
				return
			}
		case msg.Command == "PONG" && msg.Param(len(msg.Params)-1) == syncToken:
			select {
			case rd.synced <- struct{}{}:
			default:
			}
		}
	}
}

// releaseSignedChannels sends QUIT on every connection, waits (bounded)
// for the server to close them and closes the rest.
func releaseSignedChannels(senders []*signingSender, readers [][]*drainReader) {
	ctx, cancel := context.WithTimeout(context.Background(), quitWait)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range senders {
		if s == nil {
			continue
		}
		wg.Go(func() {
			if s.conn.writeLines(ctx, "QUIT :benchmark done") == nil {
				drainUntilClosed(ctx, s.conn)
			}
			s.conn.close()
		})
	}
	for _, channel := range readers {
		for _, rd := range channel {
			if rd == nil {
				continue
			}
			_ = rd.conn.writeLines(ctx, "QUIT :benchmark done")
		}
	}
	for _, channel := range readers {
		for _, rd := range channel {
			if rd == nil {
				continue
			}
			select {
			case <-rd.done:
			case <-ctx.Done():
			}
			rd.conn.close()
			<-rd.done
		}
	}
	wg.Wait()
}

// RejectionKinds lists the rejection counts as "reason=n" in a stable
// order.
func (r SignedMessagesResult) RejectionKinds() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(r.Rejections)) {
		parts = append(parts, k+"="+strconv.Itoa(r.Rejections[k]))
	}
	return strings.Join(parts, ", ")
}
