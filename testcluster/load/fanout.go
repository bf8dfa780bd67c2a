package load

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// RampConfig is a rising rate: steps of StepDuration at StartRate,
// StartRate×Factor, … messages per second. The ramp stops after the
// first step that fails (a p99 above P99Limit, or a message not delivered
// or not acknowledged by the end of its drain) or after Steps steps.
//
// With Rates set the steps are those fixed rates instead, in that order,
// and every one of them runs whatever the steps before it did: a latency
// cliff between two rates shows up as a failed step followed by passing
// ones, where a ramp would have stopped at it.
type RampConfig struct {
	Rates        []float64     // fixed rates of the steps; StartRate, Factor and Steps are then unused
	StartRate    float64       // messages/s of the first step; default 100
	Factor       float64       // rate multiplier between steps; default 2
	Steps        int           // at most; default 8
	StepDuration time.Duration // default 5 s
	P99Limit     time.Duration // a step passes at or under it; default 50 ms
	// Drain bounds the wait after a step for the messages still in
	// flight; default 5 s.
	Drain time.Duration
}

func (r RampConfig) withDefaults() RampConfig {
	orDefault(&r.StartRate, 100)
	orDefault(&r.Factor, 2)
	orDefault(&r.Steps, 8)
	orDefault(&r.StepDuration, 5*time.Second)
	orDefault(&r.P99Limit, 50*time.Millisecond)
	orDefault(&r.Drain, 5*time.Second)
	return r
}

// rates lists the rate of every step.
func (r RampConfig) rates() []float64 {
	if len(r.Rates) > 0 {
		return slices.Clone(r.Rates)
	}
	out := make([]float64, r.Steps)
	rate := r.StartRate
	for i := range out {
		out[i] = rate
		rate *= r.Factor
	}
	return out
}

// FanoutConfig configures the PRIVMSG flow scenarios on one server:
//
//   - B3: one channel of ChannelSize (1,000) members, one sender, a rising
//     rate; the metric is deliveries/s at p99 send → delivery ≤ 50 ms with
//     every message delivered.
//   - B4: Channels channels of 10 members (10,000 clients), a random member
//     of each channel in turn sends; the same metric (target p99 ≤ 50 ms).
//   - B11 (Acks): one member per channel sends with echo-message; the
//     metric is acknowledged (echoed, so stored) messages/s at p99 send →
//     echo ≤ 10 ms with every message acknowledged.
//
// Only plain IRC is used (guests, CAP only when offered), so any server
// can be measured; B11 needs echo-message.
type FanoutConfig struct {
	Channels      int  // default 1
	ChannelSize   int  // members per channel; default 1000
	RandomSenders bool // a random live member sends each message (else the first)
	// Acks measures the echo of each message to its sender (B11) instead
	// of its delivery to the other members; it asks for echo-message.
	Acks      bool
	BodyBytes int // message text length; default 100
	Ramp      RampConfig
	// Tick is how often the pacer writes the messages that fell due; default 5 ms.
	Tick             time.Duration
	SetupConcurrency int           // clients being set up at once; default 64
	Timeout          time.Duration // bound on one client's setup; default 30 s
	// ServerCPU, when set, reads the server's CPU time used so far.
	ServerCPU func() (time.Duration, error)
	Progress  io.Writer // progress lines; nil for none
	Label     string    // prefix of progress lines
}

func (c FanoutConfig) withDefaults() FanoutConfig {
	orDefault(&c.Channels, 1)
	orDefault(&c.ChannelSize, 1000)
	orDefault(&c.BodyBytes, 100)
	orDefault(&c.Tick, 5*time.Millisecond)
	orDefault(&c.SetupConcurrency, 64)
	orDefault(&c.Timeout, 30*time.Second)
	labelOr(&c.Label, "fan-out")
	c.Ramp = c.Ramp.withDefaults()
	return c
}

// FanoutStep is one rate of a ramp.
type FanoutStep struct {
	Rate     float64       `json:"rate"`      // messages/s asked for
	Sent     int64         `json:"sent"`      // messages written
	SendRate float64       `json:"send_rate"` // Sent over the step's time
	sendTime time.Duration // from the step's first write to its last
	Failed   int64         `json:"failed"`  // writes that failed
	Skipped  int64         `json:"skipped"` // messages not sent (no live sender)
	// Expected counts the deliveries owed (the other members of the
	// channel at each write), Delivered the distinct ones received by the
	// end of the drain; DeliveriesPerSecond is Delivered over the sending
	// time, Latency send → delivery.
	Expected            int64          `json:"expected"`
	Delivered           int64          `json:"delivered"`
	Duplicates          int64          `json:"duplicates"`
	DeliveriesPerSecond float64        `json:"deliveries_per_second"`
	Latency             LatencySummary `json:"latency"`
	// Acked counts the messages whose echo their sender read (with
	// echo-message); Echo is send → echo.
	Acked         int64          `json:"acked"`
	AcksPerSecond float64        `json:"acks_per_second"`
	Echo          LatencySummary `json:"echo"`
	Refusals      int64          `json:"refusals"`
	Drain         time.Duration  `json:"drain_ns"`
	Elapsed       time.Duration  `json:"elapsed_ns"` // sending and drain
	ClientCPU     time.Duration  `json:"client_cpu_ns"`
	ServerCPU     time.Duration  `json:"server_cpu_ns,omitempty"`
	Passed        bool           `json:"passed"`
	Why           string         `json:"why,omitempty"` // why it failed
}

// FanoutResult is the outcome of one run of a ramp.
type FanoutResult struct {
	Transport   Transport     `json:"transport"`
	Channels    int           `json:"channels"`
	ChannelSize int           `json:"channel_size"`
	Connected   int           `json:"connected"`
	Acks        bool          `json:"acks"`
	P99Limit    time.Duration `json:"p99_limit_ns"`
	Steps       []FanoutStep  `json:"steps"`
	// Best is the index of the fastest step that passed, −1 when none did;
	// with fixed rates, the last step of the run of passing steps the run
	// begins with (every step up to it passed).
	Best int `json:"best"`
	// Fixed says the steps were fixed rates, all of them run.
	Fixed      bool          `json:"fixed,omitempty"`
	Unknown    int64         `json:"unknown"` // PRIVMSGs that matched no message sent
	Dropped    int           `json:"dropped"` // members whose connection ended during the run
	FirstFails []string      `json:"first_failures,omitempty"`
	SetupTime  time.Duration `json:"setup_ns"`
}

// RunFanout runs B3, B4 or B11 (see FanoutConfig) once: it connects
// Channels×ChannelSize clients (each registers and joins its channel),
// then runs the ramp, draining after each step before the next.
func RunFanout(ctx context.Context, target Target, cfg FanoutConfig) (FanoutResult, error) {
	cfg = cfg.withDefaults()
	res := FanoutResult{Channels: cfg.Channels, ChannelSize: cfg.ChannelSize, Acks: cfg.Acks, P99Limit: cfg.Ramp.P99Limit, Best: -1,
		Fixed: len(cfg.Ramp.Rates) > 0}
	d, err := newDialer(target)
	if err != nil {
		return res, err
	}
	res.Transport = d.target.Transport
	out := newLockedWriter(cfg.Progress)
	rates := cfg.Ramp.rates()
	total := 0.0
	for _, r := range rates {
		total += r * cfg.Ramp.StepDuration.Seconds()
	}
	capacity := int(math.Ceil(total/float64(cfg.Channels))) + 64
	tag := randomTag(4)
	channels := make([]*flowChannel, cfg.Channels)
	for i := range channels {
		channels[i] = newFlowChannel(i, "#f-"+tag+"-"+strconv.Itoa(i), capacity)
	}
	clients := cfg.Channels * cfg.ChannelSize
	setupStart := time.Now()
	stopProgress := startProgress(out, progressInterval, func() string {
		return fmt.Sprintf("%s: setting up %d clients, %.0fs", cfg.Label, clients, time.Since(setupStart).Seconds())
	})
	group, err := setupFlow(ctx, flowSetup{
		dialers: []*dialer{d}, nodeOf: func(int) int { return 0 },
		channels: channels, channelOf: func(i int) int { return i / cfg.ChannelSize },
		clients: clients, echo: cfg.Acks, concurrency: cfg.SetupConcurrency, timeout: cfg.Timeout,
		nickPrefix: "f" + tag,
	})
	stopProgress()
	defer group.release()
	if err != nil {
		return res, err
	}
	res.SetupTime, res.Connected = time.Since(setupStart), len(group.clients)
	progressf(out, "%s: %d clients in %d channels set up in %.1fs", cfg.Label, res.Connected, cfg.Channels, res.SetupTime.Seconds())

	pick := pickFirst
	if cfg.RandomSenders {
		pick = pickRandom
	}
	p := &pacer{channels: channels, pick: pick, text: flowText(cfg.BodyBytes), tick: cfg.Tick, rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
	var prevDelivered, prevAcked int64
	allPassed := true
	for _, rate := range rates {
		step, err := runFanoutStep(ctx, p, group.clients, cfg, rate, &prevDelivered, &prevAcked, out)
		res.Steps = append(res.Steps, step)
		if err != nil {
			return res, err
		}
		allPassed = allPassed && step.Passed
		if allPassed {
			res.Best = len(res.Steps) - 1
		}
		if !step.Passed && !res.Fixed {
			break
		}
	}
	final := takeTally(group.clients)
	res.Unknown, res.FirstFails = final.unknown, final.first
	for _, c := range group.clients {
		if !c.alive.Load() {
			res.Dropped++
		}
	}
	return res, ctx.Err()
}

// runFanoutStep sends at rate for one step, drains and judges the step.
func runFanoutStep(ctx context.Context, p *pacer, clients []*flowClient, cfg FanoutConfig, rate float64, prevDelivered, prevAcked *int64, out io.Writer) (FanoutStep, error) {
	step := FanoutStep{Rate: rate}
	sent0, exp0, failed0, skipped0 := p.sent.Load(), p.expected.Load(), p.failed.Load(), p.skipped.Load()
	ph, err := startPhase(out, cfg.ServerCPU, func(el time.Duration) string {
		dl, ak := counts(clients)
		if cfg.Acks {
			return fmt.Sprintf("%s: %.0f/s step %.0fs: %d sent, %d acked", cfg.Label, rate, el.Seconds(), p.sent.Load()-sent0, ak-*prevAcked)
		}
		return fmt.Sprintf("%s: %.0f/s step %.0fs: %d sent, %d delivered", cfg.Label, rate, el.Seconds(), p.sent.Load()-sent0, dl-*prevDelivered)
	})
	if err != nil {
		return step, err
	}
	sendStart := time.Now()
	p.run(ctx, rate, cfg.Ramp.StepDuration)
	sendTime := time.Since(sendStart)
	step.Sent, step.Failed, step.Skipped = p.sent.Load()-sent0, p.failed.Load()-failed0, p.skipped.Load()-skipped0
	step.Expected = p.expected.Load() - exp0
	owedAcks := step.Sent - step.Failed
	step.Drain = waitFor(ctx, cfg.Ramp.Drain, func() bool {
		dl, ak := counts(clients)
		if cfg.Acks {
			return ak-*prevAcked >= owedAcks
		}
		return dl-*prevDelivered >= step.Expected
	})
	totals, err := ph.end()
	if err != nil {
		return step, err
	}
	t := takeTally(clients)
	step.Delivered, step.Acked = t.delivered-*prevDelivered, t.acked-*prevAcked
	*prevDelivered, *prevAcked = t.delivered, t.acked
	step.Duplicates, step.Refusals = t.dups, t.refusals
	step.Latency, step.Echo = SummarizeLatencies(t.latencies), SummarizeLatencies(t.echoes)
	step.SendRate, step.sendTime = perSecond(step.Sent, sendTime), sendTime
	step.DeliveriesPerSecond = perSecond(step.Delivered, sendTime)
	step.AcksPerSecond = perSecond(step.Acked, sendTime)
	step.ClientCPU, step.ServerCPU, step.Elapsed = totals.ClientCPU, totals.ServerCPU, totals.Elapsed
	step.judge(cfg)
	verdict := "passed"
	if !step.Passed {
		verdict = "failed: " + step.Why
	}
	if cfg.Acks {
		progressf(out, "%s: %.0f/s: %d sent, %d acked = %.0f/s, echo p50 %s p99 %s; %s", cfg.Label, rate, step.Sent, step.Acked,
			step.AcksPerSecond, step.Echo.P50.Round(time.Microsecond), step.Echo.P99.Round(time.Microsecond), verdict)
	} else {
		progressf(out, "%s: %.0f/s: %d sent, %d/%d delivered = %.0f deliveries/s, p50 %s p99 %s; %s", cfg.Label, rate, step.Sent,
			step.Delivered, step.Expected, step.DeliveriesPerSecond, step.Latency.P50.Round(time.Microsecond), step.Latency.P99.Round(time.Microsecond), verdict)
	}
	return step, ctx.Err()
}

// judge decides whether the step met the scenario's bar.
func (s *FanoutStep) judge(cfg FanoutConfig) {
	lat, what := s.Latency, "delivery"
	var missing int64
	if cfg.Acks {
		lat, what = s.Echo, "echo"
		missing = s.Sent - s.Failed - s.Acked
	} else {
		missing = s.Expected - s.Delivered
	}
	var why []string
	if s.Sent == 0 {
		why = append(why, "nothing sent")
	}
	if missing > 0 {
		why = append(why, fmt.Sprintf("%d missing", missing))
	}
	if s.Failed > 0 || s.Skipped > 0 {
		why = append(why, fmt.Sprintf("%d writes failed, %d skipped", s.Failed, s.Skipped))
	}
	if lat.P99 > cfg.Ramp.P99Limit {
		why = append(why, fmt.Sprintf("%s p99 %s over %s", what, lat.P99.Round(time.Microsecond), cfg.Ramp.P99Limit))
	}
	// The sender fell behind when it wrote less than was due, or finished the step's writes
	// late (they blocked). A final tick that fires a little late is not falling behind: judging
	// Sent over the measured send time failed short steps on a loaded machine (8 of 8 messages
	// sent in 237 ms of a 200 ms step read as "35/s of 40/s").
	due := s.Rate * cfg.Ramp.StepDuration.Seconds()
	late := cfg.Ramp.StepDuration + max(100*time.Millisecond, cfg.Ramp.StepDuration/10)
	if float64(s.Sent) < 0.9*due || s.sendTime > late {
		why = append(why, fmt.Sprintf("sent only %.0f/s", s.SendRate))
	}
	s.Passed, s.Why = len(why) == 0, strings.Join(why, "; ")
}
