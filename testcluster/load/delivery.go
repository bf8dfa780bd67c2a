package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// DeliveryConfig configures scenario B14: Users clients spread over the
// nodes of a cluster and over Channels channels; random members send at
// Rate messages/s in total while one node is killed (SIGKILL) and started
// again; every acknowledged message must reach every member exactly once:
// live, or, for the users of the killed node, from the CHATHISTORY
// catch-up their clients make after reconnecting (deliveryaccount.go).
type DeliveryConfig struct {
	Users     int           // default 1000
	Channels  int           // default 5
	Rate      float64       // messages/s, all senders together; default 100
	Duration  time.Duration // how long to send; default 20 s
	BodyBytes int           // default 100
	// KillAfter is when (after sending starts) the node is killed,
	// RestartAfter how long it stays down; defaults 5 s and 5 s.
	KillAfter, RestartAfter time.Duration
	// KillLeader kills the Raft leader instead of a follower.
	KillLeader bool
	// Tick is how often the pacer writes the messages due; default 5 ms.
	Tick             time.Duration
	SetupConcurrency int           // default 32
	Timeout          time.Duration // bound on each setup step, the restart and the final drain; default 30 s
	Progress         io.Writer
	Label            string
	// JoinReplay has the clients do without draft/chathistory: after a
	// reconnection they get only what the server replays on JOIN (and
	// messages sent while they were away beyond that are lost to them).
	JoinReplay bool
	// Details prints every lost, duplicated and late delivery kept in
	// DeliveryResult.Details (the counts by class are always printed).
	Details bool
}

func (c DeliveryConfig) withDefaults() DeliveryConfig {
	orDefault(&c.Users, 1000)
	orDefault(&c.Channels, 5)
	orDefault(&c.Rate, 100)
	orDefault(&c.Duration, 20*time.Second)
	orDefault(&c.BodyBytes, 100)
	orDefault(&c.KillAfter, 5*time.Second)
	orDefault(&c.RestartAfter, 5*time.Second)
	orDefault(&c.Tick, 5*time.Millisecond)
	orDefault(&c.SetupConcurrency, 32)
	orDefault(&c.Timeout, 30*time.Second)
	labelOr(&c.Label, "B14")
	return c
}

// DeliveryResult is the outcome of one B14 run.
type DeliveryResult struct {
	Nodes  []NodeHealth `json:"nodes"`
	Killed string       `json:"killed"` // the node killed and restarted
	Role   string       `json:"role"`   // its role when killed
	// KilledAt and RestartedAt are since sending started; Restart is how
	// long the restarted node took to serve again; Reconnected counts its
	// clients that connected and joined again.
	KilledAt    time.Duration `json:"killed_at_ns"`
	RestartedAt time.Duration `json:"restarted_at_ns"`
	Restart     time.Duration `json:"restart_ns"`
	Reconnected int           `json:"reconnected"`
	Sent        int64         `json:"sent"`
	// Acked counts the messages whose sender read their echo: the server
	// accepted them. Owed is, over the acknowledged messages and the users
	// connected at the end, each message sent to a user's channel after
	// its first JOIN completed, not by the user; Delivered the owed
	// deliveries that arrived, live or from the catch-up after a
	// reconnection; Lost the rest (after the drain).
	Acked     int64 `json:"acked"`
	Owed      int64 `json:"owed"`
	Delivered int64 `json:"delivered"`
	Lost      int64 `json:"lost"`
	// FromHistory counts the owed deliveries that only the CHATHISTORY
	// catch-up brought (not timed); Overlap the messages a user read both
	// live and from history (a client removes them by msgid; not
	// duplicates).
	FromHistory int64 `json:"from_history"`
	Overlap     int64 `json:"overlap"`
	// Duplicates counts messages a user received live twice, on one
	// connection or on both of its connections.
	Duplicates int64 `json:"duplicates"`
	Unknown    int64 `json:"unknown"`
	// Early counts messages a connection received live although they were
	// sent before its JOIN completed (not timed; see Details.Late).
	Early      int64            `json:"early"`
	Refusals   int64            `json:"refusals"`
	FirstFails []string         `json:"first_failures,omitempty"`
	Latency    LatencySummary   `json:"latency"` // send → delivery, live deliveries
	Echo       LatencySummary   `json:"echo"`    // send → echo
	Drain      time.Duration    `json:"drain_ns"`
	ClientCPU  time.Duration    `json:"client_cpu_ns"`
	SetupTime  time.Duration    `json:"setup_ns"`
	Details    *DeliveryDetails `json:"details,omitempty"`
}

// Completeness is Delivered over Owed (1 when nothing was owed).
func (r DeliveryResult) Completeness() float64 {
	if r.Owed == 0 {
		return 1
	}
	return float64(r.Delivered) / float64(r.Owed)
}

// RunDelivery runs B14. Setup: user i connects to node i mod nodes, as a
// guest with echo-message, batch, message-tags and draft/chathistory,
// and joins channel i mod Channels. Sending: a random live member of each
// channel in turn, Rate messages/s in total, for Duration. At KillAfter a
// follower (or the leader) gets SIGKILL; its clients' connections end;
// RestartAfter later it is started again on its data, and once it serves
// its users connect, join again and catch up with CHATHISTORY AFTER the
// last msgid they read (historyFetch). After the sending the run waits (up
// to Timeout) until, at two polls in a row with the same deliveries owed,
// every message sent on an open connection was echoed, every owed delivery
// arrived and every catch-up ended; then, in one pass over the users, it
// counts what was owed and delivered and classifies what went wrong
// (deliverydetails.go).
func RunDelivery(ctx context.Context, target ClusterTarget, cfg DeliveryConfig) (DeliveryResult, error) {
	cfg = cfg.withDefaults()
	var res DeliveryResult
	run, err := startClusterRun(ctx, target, cfg.Timeout)
	if err != nil {
		return res, err
	}
	defer run.close()
	out := newLockedWriter(cfg.Progress)
	target, dialers, health, leader, h := run.target, run.dialers, run.health, run.leader, run.nodes
	res.Nodes = h
	victim := (leader + 1) % len(target.Nodes)
	if cfg.KillLeader {
		victim = leader
	}
	if target.Nodes[victim].Kill == nil || target.Nodes[victim].Restart == nil {
		return res, errors.New("load: B14 kills and restarts a node: the cluster must be spawned")
	}
	res.Killed, res.Role = target.nodeName(victim), h[victim].Role

	capacity := int(math.Ceil(cfg.Rate*cfg.Duration.Seconds()*1.05/float64(cfg.Channels))) + 64
	tag := randomTag(4)
	channels := make([]*flowChannel, cfg.Channels)
	for i := range channels {
		channels[i] = newFlowChannel(i, "#d-"+tag+"-"+strconv.Itoa(i), capacity)
	}
	setup := flowSetup{
		dialers: dialers, nodeOf: func(i int) int { return i % len(dialers) },
		channels: channels, channelOf: func(i int) int { return i % cfg.Channels },
		clients: cfg.Users, echo: true, history: true, joinReplay: cfg.JoinReplay, concurrency: cfg.SetupConcurrency, timeout: cfg.Timeout,
		nickPrefix: "d" + tag,
	}
	setupStart := time.Now()
	group, err := setupFlow(ctx, setup)
	defer func() { group.release() }()
	if err != nil {
		return res, err
	}
	res.SetupTime = time.Since(setupStart)
	progressf(out, "%s: %d users in %d channels on %d nodes set up in %.1fs; %s (%s) will be killed", cfg.Label,
		len(group.clients), cfg.Channels, len(dialers), res.SetupTime.Seconds(), res.Killed, res.Role)

	p := &pacer{channels: channels, pick: pickRandom, text: flowText(cfg.BodyBytes), tick: cfg.Tick, rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
	ph, err := startPhase(out, nil, func(el time.Duration) string {
		dl, ak := counts(group.all())
		return fmt.Sprintf("%s: %.0fs %d sent, %d acked, %d delivered", cfg.Label, el.Seconds(), p.sent.Load(), ak, dl)
	})
	if err != nil {
		return res, err
	}
	start := time.Now()
	paced := make(chan struct{})
	go func() {
		defer close(paced)
		p.run(ctx, cfg.Rate, cfg.Duration)
	}()
	tl := deliveryTimeline{start: start.UnixNano(), killed: victim}
	chaosErr := runKillRestart(ctx, target, victim, setup, group, start, cfg, &res, &tl, out)
	<-paced
	res.Sent = p.sent.Load() - p.failed.Load()
	users := deliveryUsers(channels)
	settledOwed := int64(-1) // what was owed at the previous poll, when everything had arrived
	res.Drain = pollFor(ctx, cfg.Timeout, 100*time.Millisecond, func() bool {
		o, d := userDeliveries(users)
		settled := d >= o && catchUpsPending(users) == 0 && echoesPending(channels, group.all()) == 0
		again := settled && o == settledOwed
		settledOwed = -1
		if settled {
			settledOwed = o
		}
		return again
	})
	totals, err := ph.end()
	if err != nil {
		return res, err
	}
	res.ClientCPU = totals.ClientCPU
	t := takeTally(group.all())
	res.Acked, res.Duplicates, res.Unknown, res.Refusals, res.FirstFails = t.acked, t.dups, t.unknown, t.refusals, t.first
	res.Early, res.FromHistory, res.Overlap = t.early, t.fromHist, t.overlap
	res.Latency, res.Echo = SummarizeLatencies(t.latencies), SummarizeLatencies(t.echoes)

	for i := range target.Nodes {
		tl.names = append(tl.names, target.nodeName(i))
	}
	tl.byIndex = map[int]*flowClient{}
	for _, c := range group.all() {
		tl.byIndex[c.index] = c
	}
	details, across := buildDeliveryDetails(users, tl)
	res.Owed, res.Delivered = details.owed, details.delivered
	res.Lost = res.Owed - res.Delivered
	res.Duplicates += across
	lookupStored(ctx, health, target.Nodes, tl.names, details.Lost)
	res.Details = details
	progressf(out, "%s: %d sent, %d acked; %d/%d owed deliveries arrived (%.4f%%; %d from history), %d lost, %d duplicates; delivery p50 %s p99 %s",
		cfg.Label, res.Sent, res.Acked, res.Delivered, res.Owed, 100*res.Completeness(), res.FromHistory, res.Lost, res.Duplicates,
		res.Latency.P50.Round(time.Microsecond), res.Latency.P99.Round(time.Microsecond))
	printDeliveryDetails(out, cfg.Label, details, cfg.Details)
	if chaosErr != nil {
		return res, chaosErr
	}
	return res, ctx.Err()
}

// runKillRestart kills node victim at cfg.KillAfter, restarts it
// cfg.RestartAfter later and reconnects its users into their slots.
func runKillRestart(ctx context.Context, target ClusterTarget, victim int, setup flowSetup, group *flowGroup, start time.Time, cfg DeliveryConfig, res *DeliveryResult, tl *deliveryTimeline, out io.Writer) error {
	if !sleepCtx(ctx, time.Until(start.Add(cfg.KillAfter))) {
		return ctx.Err()
	}
	res.KilledAt = time.Since(start)
	tl.killedAt = start.Add(res.KilledAt).UnixNano()
	if err := target.Nodes[victim].Kill(); err != nil {
		return fmt.Errorf("load: killing %s: %w", res.Killed, err)
	}
	progressf(out, "%s: killed %s at %.2fs", cfg.Label, res.Killed, res.KilledAt.Seconds())
	var lost []*flowClient
	for _, c := range group.all() {
		if c.node == victim {
			lost = append(lost, c)
			<-c.done // the read loop ends with the connection
		}
	}
	if !sleepCtx(ctx, time.Until(start.Add(cfg.KillAfter+cfg.RestartAfter))) {
		return ctx.Err()
	}
	res.RestartedAt = time.Since(start)
	tl.restartedAt = start.Add(res.RestartedAt).UnixNano()
	rctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	if err := target.Nodes[victim].Restart(rctx); err != nil {
		return fmt.Errorf("load: restarting %s: %w", res.Killed, err)
	}
	res.Restart = time.Since(start) - res.RestartedAt
	progressf(out, "%s: %s serves again %.2fs after its restart; reconnecting its %d users", cfg.Label, res.Killed, res.Restart.Seconds(), len(lost))
	return forEachLimited(ctx, len(lost), cfg.SetupConcurrency, func(i int) error {
		old := lost[i]
		group.mu.Lock()
		id := group.nextID
		group.nextID++
		group.mu.Unlock()
		c, err := connectFlowClient(ctx, setup, id, victim, old.ch, old)
		if err != nil {
			return fmt.Errorf("reconnecting user %d: %w", old.index, err)
		}
		old.ch.mu.Lock()
		c.slot = old.slot
		old.ch.members[old.slot] = c
		old.ch.mu.Unlock()
		group.mu.Lock()
		group.clients = append(group.clients, c)
		res.Reconnected++
		group.mu.Unlock()
		return nil
	})
}

// printDeliveryDetails prints the counts of the anomalies by class and,
// when all is set, every record kept.
func printDeliveryDetails(out io.Writer, label string, d *DeliveryDetails, all bool) {
	c := d.CatchUps
	progressf(out, "%s: %d history catch-ups (%d pages, %d failed, %d unfinished) brought %d messages not read live, %d read live too",
		label, c.Users, c.Pages, c.Failed, c.Unfinished, c.Messages, c.Overlap)
	for _, k := range slices.Sorted(maps.Keys(d.Classes)) {
		progressf(out, "%s:   %6d %s", label, d.Classes[k], k)
	}
	if !all {
		return
	}
	for _, list := range [][]DeliveryRecord{d.Lost, d.Duplicates, d.Late} {
		for _, r := range list {
			line, err := json.Marshal(r)
			if err == nil {
				progressf(out, "%s: %s", label, line)
			}
		}
	}
}

// sleepCtx waits d and says whether ctx is still live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(max(d, 0))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
