package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// CrossNodeConfig configures scenario B15: senders on one node post
// PRIVMSGs at a fixed total rate to channels whose other members are
// connected to another node.
type CrossNodeConfig struct {
	Senders             int           // one channel each; default 16
	ReceiversPerChannel int           // members of each channel on the other node; default 1
	Rate                float64       // messages per second, all senders together; default 10,000
	Duration            time.Duration // how long to send; default 10 s
	BodyBytes           int           // message text length; default 100
	Placement           Placement     // where the senders connect; default follower
	// Tick is how often a sender writes the messages that fell due since
	// its last write (one system call each time); default 5 ms.
	Tick             time.Duration
	SetupConcurrency int           // clients being set up at once; default 16
	Timeout          time.Duration // bound on each setup step and on the final drain; default 10 s
	Progress         io.Writer     // progress lines; nil for none
	Label            string        // prefix of progress lines
}

func (c CrossNodeConfig) withDefaults() CrossNodeConfig {
	if c.Senders <= 0 {
		c.Senders = 16
	}
	if c.ReceiversPerChannel <= 0 {
		c.ReceiversPerChannel = 1
	}
	if c.Rate <= 0 {
		c.Rate = 10000
	}
	if c.Duration <= 0 {
		c.Duration = 10 * time.Second
	}
	if c.BodyBytes <= 0 {
		c.BodyBytes = 100
	}
	if c.Placement == "" {
		c.Placement = PlaceFollower
	}
	if c.Tick <= 0 {
		c.Tick = 5 * time.Millisecond
	}
	if c.SetupConcurrency <= 0 {
		c.SetupConcurrency = 16
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Label == "" {
		c.Label = "B15"
	}
	return c
}

// CrossNodeResult is the outcome of one B15 run.
type CrossNodeResult struct {
	Nodes               []NodeHealth   `json:"nodes"`
	Leader              string         `json:"leader"`
	Placement           Placement      `json:"placement"`
	Placements          map[string]int `json:"placements"` // "sender node → receiver node": senders
	Senders             int            `json:"senders"`
	ReceiversPerChannel int            `json:"receivers_per_channel"`
	TargetRate          float64        `json:"target_rate"`
	// Sent counts PRIVMSGs written; SendRate is Sent over the sending
	// time (below TargetRate when the server pushed back).
	Sent     int64   `json:"sent"`
	SendRate float64 `json:"send_rate"`
	// Expected is Sent times the receivers of each channel; Delivered
	// counts distinct messages received (by the end of the drain),
	// Duplicates the repeats.
	Expected      int64    `json:"expected"`
	Delivered     int64    `json:"delivered"`
	Duplicates    int64    `json:"duplicates"`
	Unknown       int64    `json:"unknown"` // PRIVMSGs that matched no message sent
	Refusals      int64    `json:"refusals"`
	FirstRefusals []string `json:"first_refusals,omitempty"`
	// Latency is from just before the write that carried a message to
	// its reading by a receiver on the other node; OriginEcho to the
	// sender's reading of its echo from its own node (echo-message: the
	// origin stored the message), the part of the path before the
	// exchange between nodes.
	Latency    LatencySummary `json:"latency"`
	OriginEcho LatencySummary `json:"origin_echo"`
	Drain      time.Duration  `json:"drain_ns"` // from the last write until every message arrived (or the timeout)
	// ClientCPU and ServerCPU cover the sending and the drain.
	ClientCPU time.Duration  `json:"client_cpu_ns"`
	ServerCPU []NodeCPUShare `json:"server_cpu,omitempty"`
	SetupTime time.Duration  `json:"setup_ns"`
}

// crossSender posts PRIVMSGs on a schedule and records when each went out.
type crossSender struct {
	index    int
	channel  string
	conn     lineConn
	body     func(seq int) string
	sentAt   []atomic.Int64 // unix ns of the write that carried message seq
	sent     atomic.Int64
	refusals atomic.Int64
	mu       sync.Mutex
	first    []string
	echoes   []time.Duration // send → own echo
	echoed   []bool
	done     chan struct{}
}

// crossReceiver is a member on the other node.
type crossReceiver struct {
	conn      lineConn
	sender    *crossSender
	seen      []bool
	received  atomic.Int64 // distinct messages
	mu        sync.Mutex
	latencies []time.Duration
	dups      int64
	unknown   int64
	done      chan struct{}
}

// RunCrossNodeMessages runs B15. Setup: each sender logs in with SASL (an
// ed25519 did:key, so messages carry an account and the server's
// signature) on its node and founds a channel; ReceiversPerChannel guests
// with message-tags, server-time and account-tag join it on another node.
// Each sender then writes, every Tick, the messages due at Rate/Senders
// per second since the start (open loop: it does not wait for answers).
// After Duration the run waits (up to Timeout) until every receiver has
// every message, then counts what arrived.
func RunCrossNodeMessages(ctx context.Context, target ClusterTarget, cfg CrossNodeConfig) (CrossNodeResult, error) {
	cfg = cfg.withDefaults()
	res := CrossNodeResult{Senders: cfg.Senders, ReceiversPerChannel: cfg.ReceiversPerChannel, TargetRate: cfg.Rate, Placement: cfg.Placement}
	run, err := startClusterRun(ctx, target, cfg.Timeout)
	if err != nil {
		return res, err
	}
	defer run.close()
	out := newLockedWriter(cfg.Progress)
	target, dialers, roles := run.target, run.dialers, run.roles
	res.Nodes, res.Leader = run.nodes, run.leaderName()
	places, placements, err := run.place(cfg.Placement, cfg.Senders)
	if err != nil {
		return res, err
	}
	res.Placements = placements

	perSender := cfg.Rate / float64(cfg.Senders)
	capacity := int(math.Ceil(perSender*cfg.Duration.Seconds()*1.05)) + 64
	setupStart := time.Now()
	senders, receivers, err := setupCrossNode(ctx, dialers, places, cfg, capacity)
	defer releaseCrossNode(senders, receivers)
	if err != nil {
		return res, err
	}
	res.SetupTime = time.Since(setupStart)
	progressf(out, "%s: %d senders and %d receivers set up in %.1fs (leader %s; %s)", cfg.Label, len(senders), len(receivers), res.SetupTime.Seconds(), res.Leader, placementsText(res.Placements))

	cpuStart, err := ProcessCPU()
	if err != nil {
		return res, err
	}
	nodeCPUStart := nodeCPU(target.Nodes)
	stop := make(chan struct{})
	start := time.Now()
	stopTimer := time.AfterFunc(cfg.Duration, func() { close(stop) })
	defer stopTimer.Stop()
	received := func() int64 {
		var n int64
		for _, r := range receivers {
			n += r.received.Load()
		}
		return n
	}
	sentTotal := func() int64 {
		var n int64
		for _, s := range senders {
			n += s.sent.Load()
		}
		return n
	}
	stopProgress := startProgress(out, progressInterval, func() string {
		el := time.Since(start).Seconds()
		s := sentTotal()
		return fmt.Sprintf("%s: %.0fs %d sent (%.0f/s), %d received", cfg.Label, el, s, float64(s)/el, received())
	})
	sendErrs := make([]error, len(senders))
	var wg sync.WaitGroup
	for i, s := range senders {
		wg.Go(func() { sendErrs[i] = s.paced(ctx, start, perSender, cfg.Tick, stop) })
	}
	wg.Wait()
	sendEnd := time.Now()
	res.Sent = sentTotal()
	res.Expected = res.Sent * int64(cfg.ReceiversPerChannel)
	res.Drain = waitFor(ctx, cfg.Timeout, func() bool { return received() >= res.Expected })
	stopProgress()
	// The CPU of both sides is read after the drain, so it covers the
	// delivery of every message, and is shared out over that time.
	cpuEnd, err := ProcessCPU()
	if err != nil {
		return res, err
	}
	res.ClientCPU = cpuEnd - cpuStart
	res.ServerCPU = cpuShares(target, roles, nodeCPUStart, nodeCPU(target.Nodes), time.Since(start))
	if el := sendEnd.Sub(start); el > 0 {
		res.SendRate = float64(res.Sent) / el.Seconds()
	}
	res.tally(senders, receivers)
	if err := errors.Join(sendErrs...); err != nil {
		return res, fmt.Errorf("load: B15 sender: %w", err)
	}
	progressf(out, "%s: %d sent at %.0f/s, %d/%d delivered (%d duplicates), p50 %s p99 %s, %d refused",
		cfg.Label, res.Sent, res.SendRate, res.Delivered, res.Expected, res.Duplicates,
		res.Latency.P50.Round(time.Microsecond), res.Latency.P99.Round(time.Microsecond), res.Refusals)
	return res, ctx.Err()
}

// maxCrossBatch bounds the lines of one write.
const maxCrossBatch = 256

// paced writes the messages due at rate per second since start, every
// tick, until stop closes or its record is full.
func (s *crossSender) paced(ctx context.Context, start time.Time, rate float64, tick time.Duration, stop <-chan struct{}) error {
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	lines := make([]string, 0, maxCrossBatch)
	sent := 0
	for {
		var now time.Time
		select {
		case <-stop:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return errors.New("the connection ended")
		case now = <-ticker.C:
		}
		due := min(int(now.Sub(start).Seconds()*rate), len(s.sentAt))
		n := min(due-sent, maxCrossBatch)
		if n <= 0 {
			continue
		}
		lines = lines[:0]
		for seq := sent; seq < sent+n; seq++ {
			lines = append(lines, "PRIVMSG "+s.channel+" :"+s.body(seq))
		}
		at := time.Now().UnixNano()
		for seq := sent; seq < sent+n; seq++ {
			s.sentAt[seq].Store(at)
		}
		if err := s.conn.writeLines(ctx, lines...); err != nil {
			return err
		}
		sent += n
		s.sent.Store(int64(sent))
	}
}

// readLoop times the echoes, answers PINGs and counts refusals until the
// connection ends.
func (s *crossSender) readLoop() {
	defer close(s.done)
	ctx := context.Background()
	for {
		line, err := s.conn.readLine(ctx)
		if err != nil {
			return
		}
		at := time.Now().UnixNano()
		if i := strings.Index(line, " PRIVMSG "); i >= 0 {
			if seq, ok := messageSeq(line[i:]); ok && seq < len(s.sentAt) {
				if sentAt := s.sentAt[seq].Load(); sentAt != 0 {
					s.mu.Lock()
					if !s.echoed[seq] {
						s.echoed[seq] = true
						s.echoes = append(s.echoes, time.Duration(at-sentAt))
					}
					s.mu.Unlock()
				}
			}
			continue
		}
		m, err := ircmsg.Parse(line)
		if err != nil {
			continue
		}
		switch {
		case m.Command == "PING":
			if s.conn.writeLines(ctx, pong(m)) != nil {
				return
			}
		case m.Command == "FAIL", m.Command == "404", m.Command == "ERROR":
			s.refusals.Add(1)
			s.mu.Lock()
			if len(s.first) < maxFirstErrors {
				s.first = append(s.first, truncate(line, 200))
			}
			s.mu.Unlock()
		}
	}
}

// readLoop matches the PRIVMSGs the receiver gets to their sends.
func (r *crossReceiver) readLoop() {
	defer close(r.done)
	ctx := context.Background()
	for {
		line, err := r.conn.readLine(ctx)
		if err != nil {
			return
		}
		at := time.Now().UnixNano()
		if i := strings.Index(line, " PRIVMSG "); i >= 0 {
			r.match(line[i:], at)
			continue
		}
		if strings.Contains(line, "PING") {
			if m, err := ircmsg.Parse(line); err == nil && m.Command == "PING" {
				if r.conn.writeLines(ctx, pong(m)) != nil {
					return
				}
			}
		}
	}
}

// messageSeq reads the sequence number from " PRIVMSG #chan :s<i> <seq>
// xxx…" (the part of a line from the command on: tags and source hold no
// " PRIVMSG ").
func messageSeq(rest string) (int, bool) {
	_, text, ok := strings.Cut(rest, " :")
	if !ok {
		return 0, false
	}
	_, after, _ := strings.Cut(text, " ")
	seqText, _, _ := strings.Cut(after, " ")
	seq, err := strconv.Atoi(seqText)
	return seq, err == nil && seq >= 0
}

// match times a PRIVMSG (the line from " PRIVMSG " on) against its send.
func (r *crossReceiver) match(rest string, at int64) {
	seq, ok := messageSeq(rest)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !ok || seq >= len(r.seen) {
		r.unknown++
		return
	}
	sentAt := r.sender.sentAt[seq].Load()
	switch {
	case sentAt == 0:
		r.unknown++
	case r.seen[seq]:
		r.dups++
	default:
		r.seen[seq] = true
		r.latencies = append(r.latencies, time.Duration(at-sentAt))
		r.received.Add(1)
	}
}

// setupCrossNode logs the senders in (each founds its channel), then the
// receivers, SetupConcurrency at a time; it returns what it set up even
// when it fails, for release.
func setupCrossNode(ctx context.Context, dialers []*dialer, places []clientPlace, cfg CrossNodeConfig, capacity int) ([]*crossSender, []*crossReceiver, error) {
	tag := randomTag(4)
	signers, err := GenerateSigners(CurveEd25519, len(places))
	if err != nil {
		return nil, nil, err
	}
	senders := make([]*crossSender, len(places))
	err = forEachLimited(ctx, len(places), cfg.SetupConcurrency, func(i int) error {
		s := &crossSender{
			index: i, channel: "#x-" + tag + "-" + strconv.Itoa(i),
			body:   benchBody("s"+strconv.Itoa(i)+" ", cfg.BodyBytes),
			sentAt: make([]atomic.Int64, capacity), echoed: make([]bool, capacity), done: make(chan struct{}),
		}
		sctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
		conn, err := dialers[places[i].home].dial(sctx)
		if err != nil {
			return fmt.Errorf("sender %d: %w", i, err)
		}
		id := &identity{signer: signers[i], did: signers[i].DID()}
		if err := joinAfterLogin(sctx, conn, id, "x"+tag+strconv.Itoa(i), s.channel); err != nil {
			conn.close()
			return fmt.Errorf("sender %d: %w", i, err)
		}
		s.conn = conn
		senders[i] = s
		go s.readLoop()
		return nil
	})
	if err != nil {
		return senders, nil, err
	}
	receivers := make([]*crossReceiver, len(places)*cfg.ReceiversPerChannel)
	err = forEachLimited(ctx, len(receivers), cfg.SetupConcurrency, func(i int) error {
		s := senders[i/cfg.ReceiversPerChannel]
		rctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
		conn, err := dialers[places[s.index].other].dial(rctx)
		if err != nil {
			return fmt.Errorf("receiver %d: %w", i, err)
		}
		if err := registerWithCapsAndJoin(rctx, conn, "r"+tag+strconv.Itoa(i), s.channel); err != nil {
			conn.close()
			return fmt.Errorf("receiver %d: %w", i, err)
		}
		r := &crossReceiver{conn: conn, sender: s, seen: make([]bool, capacity), done: make(chan struct{})}
		receivers[i] = r
		go r.readLoop()
		return nil
	})
	return senders, receivers, err
}

// joinAfterLogin logs in with SASL, asking for echo-message, and joins
// channel.
func joinAfterLogin(ctx context.Context, conn lineConn, id *identity, nick, channel string) error {
	if err := saslLogin(ctx, conn, id, nick, "echo-message"); err != nil {
		return err
	}
	if err := conn.writeLines(ctx, "JOIN "+channel); err != nil {
		return err
	}
	if _, err := readUntil(ctx, conn, joinFailures, isCommand("366")); err != nil {
		return fmt.Errorf("joining %s: %w", channel, err)
	}
	return nil
}

// releaseCrossNode QUITs every client that was set up.
func releaseCrossNode(senders []*crossSender, receivers []*crossReceiver) {
	var conns []lineConn
	var dones []chan struct{}
	for _, s := range senders {
		if s != nil {
			conns, dones = append(conns, s.conn), append(dones, s.done)
		}
	}
	for _, r := range receivers {
		if r != nil {
			conns, dones = append(conns, r.conn), append(dones, r.done)
		}
	}
	quitAll(conns, dones)
}

// tally merges the receivers' and senders' counts into the result.
func (r *CrossNodeResult) tally(senders []*crossSender, receivers []*crossReceiver) {
	var all []time.Duration
	for _, rc := range receivers {
		rc.mu.Lock()
		all = append(all, rc.latencies...)
		r.Duplicates += rc.dups
		r.Unknown += rc.unknown
		rc.mu.Unlock()
		r.Delivered += rc.received.Load()
	}
	var echoes []time.Duration
	for _, s := range senders {
		r.Refusals += s.refusals.Load()
		s.mu.Lock()
		echoes = append(echoes, s.echoes...)
		for _, f := range s.first {
			if len(r.FirstRefusals) < maxFirstErrors {
				r.FirstRefusals = append(r.FirstRefusals, f)
			}
		}
		s.mu.Unlock()
	}
	r.Latency = SummarizeLatencies(all)
	r.OriginEcho = SummarizeLatencies(echoes)
}
