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
)

// ClusterChangesConfig configures scenarios B8, B9 and B10: writers, each
// with a channel of its own, make replicated changes (TOPIC, MODE, PIN)
// through one node of a cluster, and a member of each channel connected to
// another node observes them.
type ClusterChangesConfig struct {
	Writers int          // default 1
	Kinds   []ChangeKind // taken in turn by each writer; default topic, mode, pin
	// Window is how many changes a writer has sent and not yet seen
	// answered (its own echo or a refusal); default 1, a closed loop.
	Window int
	// Rate, when positive, caps the changes per second of all writers
	// together: writer i of n sends its k-th change no earlier than
	// (k·n + i)/Rate seconds after the start. Zero sends as fast as the
	// window allows.
	Rate      float64
	Duration  time.Duration // how long the writers write; default 10 s
	Placement Placement     // where the writers connect; default followers
	// TopicBytes is the length of each topic text; default 100.
	TopicBytes       int
	SetupConcurrency int // writer and observer pairs set up at once; default 16
	// Timeout bounds each setup step, the wait for one answer (a
	// forwarded change waits up to 15 s for a leader before the server
	// refuses it) and each step of the loss check; default 20 s.
	Timeout time.Duration
	// KillLeaderAfter, when positive, kills the Raft leader (ClusterNode.Kill)
	// this long after the writers start (B10). The writers and observers
	// must then be off the leader.
	KillLeaderAfter time.Duration
	Progress        io.Writer // progress lines; nil for none
	Label           string    // prefix of progress lines
}

func (c ClusterChangesConfig) withDefaults() ClusterChangesConfig {
	if c.Writers <= 0 {
		c.Writers = 1
	}
	if len(c.Kinds) == 0 {
		c.Kinds = []ChangeKind{ChangeTopic, ChangeMode, ChangePin}
	}
	if c.Window <= 0 {
		c.Window = 1
	}
	if c.Duration <= 0 {
		c.Duration = 10 * time.Second
	}
	if c.Placement == "" {
		c.Placement = PlaceFollowers
	}
	if c.TopicBytes <= 0 {
		c.TopicBytes = 100
	}
	if c.SetupConcurrency <= 0 {
		c.SetupConcurrency = 16
	}
	if c.Timeout <= 0 {
		c.Timeout = 20 * time.Second
	}
	if c.Label == "" {
		c.Label = "B8"
	}
	return c
}

// ClusterChangesResult is the outcome of one B8, B9 or B10 run.
type ClusterChangesResult struct {
	Nodes     []NodeHealth `json:"nodes"` // at the start
	Leader    string       `json:"leader"`
	Writers   int          `json:"writers"`
	Window    int          `json:"window"`
	Rate      float64      `json:"rate,omitempty"` // the cap asked for
	Kinds     []ChangeKind `json:"kinds"`
	Placement Placement    `json:"placement"`
	// Placements lists "writer node → observer node" with the count of
	// writers on each pair.
	Placements map[string]int `json:"placements"`

	// Sent counts the changes written during the run (the closing topics
	// of the loss check excluded). Each is Acked (its writer saw its own
	// echo), Failed (refused) or Unanswered (neither, within the timeout).
	Sent       int            `json:"sent"`
	Acked      int            `json:"acked"`
	Failed     int            `json:"failed"`
	Refusals   map[string]int `json:"refusals,omitempty"`
	Unanswered int            `json:"unanswered"`
	// Observed counts the changes the observer on the other node saw;
	// Duplicates the sightings beyond the first.
	Observed            int `json:"observed"`
	Duplicates          int `json:"duplicates"`
	UnknownObservations int `json:"unknown_observations"`
	// Lost counts acknowledged changes the observer had not seen when it
	// saw its writer's closing topic (see RunClusterChanges); Unverified
	// those of writers whose loss check did not complete.
	Lost            int      `json:"lost"`
	LostKeys        []string `json:"lost_keys,omitempty"`
	Unverified      int      `json:"unverified"`
	LossChecked     int      `json:"loss_checked"` // writers whose loss check completed
	LossCheckErrors []string `json:"loss_check_errors,omitempty"`
	// CommittedUnacked counts changes observed although their writer got a
	// refusal or no answer (committed after all).
	CommittedUnacked int      `json:"committed_unacked"`
	WriterErrors     []string `json:"writer_errors,omitempty"`

	// Elapsed runs from the writers' start to the last sighting of a
	// change sent during the run.
	Elapsed          time.Duration                 `json:"elapsed_ns"`
	ChangesPerSecond float64                       `json:"changes_per_second"` // observed changes per second of Elapsed
	Observe          LatencySummary                `json:"observe_latency"`    // send → seen on the other node
	Ack              LatencySummary                `json:"ack_latency"`        // send → the writer's own echo
	ObserveByKind    map[ChangeKind]LatencySummary `json:"observe_by_kind,omitempty"`

	// TermStart and TermEnd are the highest Raft term any node reported
	// before and after the writing phase; Elections is their difference.
	TermStart uint64            `json:"term_start"`
	TermEnd   uint64            `json:"term_end"`
	Elections int               `json:"elections"`
	Kill      *LeaderKillResult `json:"kill,omitempty"`

	ClientCPU time.Duration  `json:"client_cpu_ns"`
	ServerCPU []NodeCPUShare `json:"server_cpu,omitempty"`
	SetupTime time.Duration  `json:"setup_ns"`
}

// changePair is a writer and its observer.
type changePair struct {
	place    clientPlace
	writer   *changeWriter
	observer *changeObserver
}

// RunClusterChanges runs B8, B9 or B10 against a cluster.
//
// Setup: the cluster must report one leader and term; each writer is
// placed by cfg.Placement, registers on its node with echo-message,
// founds its channel (so it is the operator) and, for pins, posts the
// messages it will pin; then its observer registers on the other node of
// its placement and joins. During the run each writer sends changes
// (kinds in turn), at most Window unanswered; a change's latency is from
// just before its write to its observer's reading of it, and its ack
// latency to the writer's reading of its own echo.
//
// With KillLeaderAfter, the leader's process is killed that long into the
// run; the result tells when a surviving node first reported itself
// leader (health polled every 10 ms), and the recovery: from the kill to
// the first sighting of a change sent after the kill.
//
// Loss check, after the writers stop and every change is answered: each
// writer sets a closing topic, waits for its echo and for its observer to
// see it, and the observer reads the channel's topic back with TOPIC (it
// must be the closing one). A change is lost when its writer saw its
// echo (so its node applied it: the server echoes a change after
// applying it from the Raft log) but the observer, which saw the closing
// topic, never saw it: Raft applies entries in log order on every node,
// so everything committed before the closing topic reached the observer
// first.
func RunClusterChanges(ctx context.Context, target ClusterTarget, cfg ClusterChangesConfig) (ClusterChangesResult, error) {
	cfg = cfg.withDefaults()
	res := ClusterChangesResult{Writers: cfg.Writers, Window: cfg.Window, Rate: cfg.Rate, Kinds: cfg.Kinds, Placement: cfg.Placement}
	run, err := startClusterRun(ctx, target, cfg.Timeout)
	if err != nil {
		return res, err
	}
	defer run.close()
	out := newLockedWriter(cfg.Progress)
	target, dialers, health, leader, roles := run.target, run.dialers, run.health, run.leader, run.roles
	res.Nodes, res.Leader = run.nodes, run.leaderName()
	places, placements, err := run.place(cfg.Placement, cfg.Writers)
	if err != nil {
		return res, err
	}
	res.Placements = placements
	for _, p := range places {
		if cfg.KillLeaderAfter > 0 && (p.home == leader || p.other == leader) {
			return res, errors.New("load: killing the leader needs every writer and observer on another node (placement follower or followers)")
		}
	}
	if cfg.KillLeaderAfter > 0 && target.Nodes[leader].Kill == nil {
		return res, fmt.Errorf("load: the leader %s cannot be killed", res.Leader)
	}

	var observed atomic.Int64 // first sightings, for progress
	setupStart := time.Now()
	pairs, err := setupChangePairs(ctx, dialers, places, cfg, &observed)
	defer releaseChangePairs(pairs)
	if err != nil {
		return res, err
	}
	res.SetupTime = time.Since(setupStart)
	progressf(out, "%s: %d writers and observers set up in %.1fs (leader %s; %s)", cfg.Label, len(pairs), res.SetupTime.Seconds(), res.Leader, placementsText(res.Placements))

	termStart := readClusterHealth(ctx, health, target.Nodes)
	res.TermStart = maxTerm(termStart)
	cpuStart, err := ProcessCPU()
	if err != nil {
		return res, err
	}
	nodeCPUStart := nodeCPU(target.Nodes)
	stop := make(chan struct{})
	start := time.Now()
	stopTimer := time.AfterFunc(cfg.Duration, func() { close(stop) })
	defer stopTimer.Stop()
	var kill *leaderKill
	if cfg.KillLeaderAfter > 0 {
		kill = startLeaderKill(ctx, health, target, cfg.KillLeaderAfter, cfg.Timeout, out, cfg.Label)
	}
	stopProgress := startProgress(out, progressInterval, func() string {
		el := time.Since(start).Seconds()
		n := observed.Load()
		return fmt.Sprintf("%s: %.0fs %d changes observed (%.0f/s)", cfg.Label, el, n, float64(n)/el)
	})
	writerErrs := make([]error, len(pairs))
	var wg sync.WaitGroup
	for i, p := range pairs {
		wg.Go(func() {
			pace := pacing{start: start}
			if cfg.Rate > 0 {
				pace.every = time.Duration(float64(time.Second) * float64(len(pairs)) / cfg.Rate)
				pace.offset = time.Duration(float64(time.Second) * float64(i) / cfg.Rate)
			}
			err := p.writer.writeChanges(ctx, stop, cfg.Window, cfg.Timeout, pace)
			if err == nil {
				err = p.writer.drain(ctx, cfg.Timeout)
			}
			writerErrs[i] = err
		})
	}
	wg.Wait()
	sendEnd := time.Now()
	stopProgress()
	cpuEnd, err := ProcessCPU()
	if err != nil {
		return res, err
	}
	res.ClientCPU = cpuEnd - cpuStart
	res.ServerCPU = cpuShares(target, roles, nodeCPUStart, nodeCPU(target.Nodes), sendEnd.Sub(start))
	if kill != nil {
		res.Kill = kill.wait()
	}
	res.TermEnd = maxTerm(readClusterHealth(ctx, health, target.Nodes))
	if res.TermEnd >= res.TermStart {
		res.Elections = int(res.TermEnd - res.TermStart)
	}
	for _, e := range writerErrs {
		if e != nil && len(res.WriterErrors) < maxFirstErrors {
			res.WriterErrors = append(res.WriterErrors, e.Error())
		}
	}

	checks := checkLosses(ctx, pairs, cfg.Timeout)
	res.tally(pairs, checks, start)
	if res.Kill != nil {
		res.Kill.measureRecovery(pairs)
	}
	progressf(out, "%s: %d changes observed in %.2fs = %.0f/s, observe p50 %s p99 %s, ack p99 %s, %d failed, %d unanswered, %d lost, %d elections",
		cfg.Label, res.Observed, res.Elapsed.Seconds(), res.ChangesPerSecond,
		res.Observe.P50.Round(time.Microsecond), res.Observe.P99.Round(time.Microsecond), res.Ack.P99.Round(time.Microsecond),
		res.Failed, res.Unanswered, res.Lost, res.Elections)
	return res, ctx.Err()
}

func placementsText(m map[string]int) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = strconv.Itoa(m[k]) + "× " + k
	}
	return strings.Join(parts, ", ")
}

func maxTerm(h clusterHealth) uint64 {
	var t uint64
	for i, n := range h.nodes {
		if h.errs[i] == nil {
			t = max(t, n.Term)
		}
	}
	return t
}

// setupChangePairs sets up each writer and then its observer,
// SetupConcurrency pairs at a time. It returns what it set up even when
// it fails, for release.
func setupChangePairs(ctx context.Context, dialers []*dialer, places []clientPlace, cfg ClusterChangesConfig, observed *atomic.Int64) ([]*changePair, error) {
	tag := randomTag(4)
	pinTargets := 0
	if slices.Contains(cfg.Kinds, ChangePin) {
		pinTargets = cfg.Window + 1 // a pin key repeats only every 2(Window+1) pin changes
	}
	pairs := make([]*changePair, len(places))
	err := forEachLimited(ctx, len(places), cfg.SetupConcurrency, func(i int) error {
		log := newChangeLog(cfg.Window)
		log.observedCount = observed
		w := &changeWriter{
			index: i, nick: "w" + tag + strconv.Itoa(i), channel: "#c-" + tag + "-" + strconv.Itoa(i), tag: tag,
			log: log, kinds: cfg.Kinds, topic: benchBody("t"+tag+"-"+strconv.Itoa(i)+"-", cfg.TopicBytes),
			done: make(chan struct{}),
		}
		p := &changePair{place: places[i], writer: w}
		pairs[i] = p
		if err := setupChangeWriter(ctx, dialers[p.place.home], w, pinTargets, cfg.Timeout); err != nil {
			return fmt.Errorf("writer %d: %w", i, err)
		}
		go w.readLoop()
		o, err := setupChangeObserver(ctx, dialers[p.place.other], "o"+tag+strconv.Itoa(i), w.channel, log, cfg.Timeout)
		if err != nil {
			return fmt.Errorf("observer %d: %w", i, err)
		}
		p.observer = o
		go o.readLoop(w.channel)
		return nil
	})
	return pairs, err
}

// releaseChangePairs QUITs every client that was set up.
func releaseChangePairs(pairs []*changePair) {
	var conns []lineConn
	var dones []chan struct{}
	for _, p := range pairs {
		if p == nil {
			continue
		}
		if p.writer.conn != nil { // set once its read loop runs
			conns, dones = append(conns, p.writer.conn), append(dones, p.writer.done)
		}
		if p.observer != nil {
			conns, dones = append(conns, p.observer.conn), append(dones, p.observer.done)
		}
	}
	quitAll(conns, dones)
}

// lossCheck is one writer's loss check.
type lossCheck struct {
	ok  bool
	err error
}

// checkLosses runs every pair's closing change in parallel.
func checkLosses(ctx context.Context, pairs []*changePair, timeout time.Duration) []lossCheck {
	checks := make([]lossCheck, len(pairs))
	var wg sync.WaitGroup
	for i, p := range pairs {
		wg.Go(func() {
			closing, current, err := p.writer.closeChange(ctx, p.observer, timeout)
			switch {
			case err != nil:
				checks[i].err = fmt.Errorf("writer %d: %w", i, err)
			case current != closing:
				checks[i].err = fmt.Errorf("writer %d: the observer's node reports the topic %q, not the closing %q", i, truncate(current, 40), truncate(closing, 40))
			default:
				checks[i].ok = true
			}
		})
	}
	wg.Wait()
	return checks
}

// tally merges the writers' change logs into the result.
func (r *ClusterChangesResult) tally(pairs []*changePair, checks []lossCheck, start time.Time) {
	var observe, ack []time.Duration
	byKind := map[ChangeKind][]time.Duration{}
	r.Refusals = map[string]int{}
	var lastSeen time.Time
	for i, p := range pairs {
		changes, unknown := p.writer.log.snapshot()
		r.UnknownObservations += unknown
		if checks[i].ok {
			r.LossChecked++
		} else if checks[i].err != nil && len(r.LossCheckErrors) < maxFirstErrors {
			r.LossCheckErrors = append(r.LossCheckErrors, checks[i].err.Error())
		}
		for _, c := range changes {
			if c.final {
				continue
			}
			r.Sent++
			acked := false
			switch {
			case c.failed != "":
				r.Failed++
				r.Refusals[c.failed]++
			case !c.acked.IsZero():
				r.Acked++
				acked = true
				ack = append(ack, c.acked.Sub(c.sent))
			default:
				r.Unanswered++
			}
			if c.observations == 0 {
				if acked && checks[i].ok {
					r.Lost++
					if len(r.LostKeys) < maxFirstErrors {
						r.LostKeys = append(r.LostKeys, c.key)
					}
				} else if acked {
					r.Unverified++
				}
				continue
			}
			r.Observed++
			r.Duplicates += c.observations - 1
			if !acked {
				r.CommittedUnacked++
			}
			d := c.observed.Sub(c.sent)
			observe = append(observe, d)
			byKind[c.kind] = append(byKind[c.kind], d)
			if c.observed.After(lastSeen) {
				lastSeen = c.observed
			}
		}
	}
	if len(r.Refusals) == 0 {
		r.Refusals = nil
	}
	r.Observe = SummarizeLatencies(observe)
	r.Ack = SummarizeLatencies(ack)
	if len(byKind) > 1 {
		r.ObserveByKind = map[ChangeKind]LatencySummary{}
		for k, ds := range byKind {
			r.ObserveByKind[k] = SummarizeLatencies(ds)
		}
	}
	if !lastSeen.IsZero() {
		r.Elapsed = lastSeen.Sub(start)
	}
	if r.Elapsed > 0 {
		r.ChangesPerSecond = float64(r.Observed) / r.Elapsed.Seconds()
	}
}
