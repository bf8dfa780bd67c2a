package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// RESTLoadKind names the REST scenario.
type RESTLoadKind string

// The REST scenarios that read stored messages.
const (
	RESTHistory RESTLoadKind = "history" // B12: GET /api/v1/channels/{c}/history?limit=50
	RESTSearch  RESTLoadKind = "search"  // B13: GET /api/v1/search?channel=c&q=… while messages are written
)

// RESTLoadConfig configures B12 and B13 against a running server: Messages
// PRIVMSGs are first stored through IRC (Channels guests, each alone in
// its channel, with echo-message so each message is known stored), then
// Concurrency keep-alive HTTP clients send GETs for Duration; for B13 the
// guests keep writing WriteRate messages/s meanwhile.
type RESTLoadConfig struct {
	Kind        RESTLoadKind
	Messages    int           // stored before the load; default 100,000
	Channels    int           // default 64
	SeedRate    float64       // messages/s while seeding; default 5,000
	Concurrency int           // default 64
	Duration    time.Duration // default 10 s
	WriteRate   float64       // messages/s written during the load; 0: 1,000 for search, none for history; negative: none
	Timeout     time.Duration // bound on setup steps, the seeding drain and one request; default 60 s
	// IndexProbeEvery is how often a search load measures the index lag
	// of a newly written message (B13); default 200 ms.
	IndexProbeEvery time.Duration
	ServerCPU       func() (time.Duration, error)
	Progress        io.Writer
	Label           string
}

func (c RESTLoadConfig) withDefaults() RESTLoadConfig {
	orDefault(&c.Messages, 100_000)
	orDefault(&c.Channels, 64)
	orDefault(&c.SeedRate, 5000)
	orDefault(&c.Concurrency, 64)
	orDefault(&c.Duration, 10*time.Second)
	if c.Kind == RESTSearch {
		orDefault(&c.WriteRate, 1000)
	}
	orDefault(&c.Timeout, 60*time.Second)
	labelOr(&c.Label, string(c.Kind))
	return c
}

// RESTLoadResult is the outcome of one B12 or B13 run.
type RESTLoadResult struct {
	Kind     RESTLoadKind  `json:"kind"`
	Stored   int64         `json:"stored"` // messages acknowledged while seeding
	SeedTime time.Duration `json:"seed_ns"`
	HTTPGetResult
	ServerCPU time.Duration `json:"server_cpu_ns,omitempty"`
	// Written and WriteEcho describe the writes during a search load.
	Written   int64          `json:"written,omitempty"`
	WriteEcho LatencySummary `json:"write_echo"`
	// IndexLag is, for probed messages written during a search load, the
	// time from the message's echo until a search first found it;
	// IndexMissing counts probed messages no search found within 10 s.
	IndexLag     LatencySummary `json:"index_lag"`
	IndexMissing int            `json:"index_missing,omitempty"`
}

// restWords is how many distinct words the seeded texts draw from; a
// message holds w<seq mod 10>, w<seq mod 100> and w<seq mod 1000>.
func restText(size int) func(seq int) string {
	filler := strings.Repeat("x", size)
	return func(seq int) string {
		head := "q" + strconv.Itoa(seq) + " w" + strconv.Itoa(seq%10) + " v" + strconv.Itoa(seq%100) + " u" + strconv.Itoa(seq%1000) + " "
		if len(head) >= size {
			return head
		}
		return head + filler[:size-len(head)]
	}
}

// RunRESTLoad runs B12 or B13 once.
func RunRESTLoad(ctx context.Context, target Target, cfg RESTLoadConfig) (RESTLoadResult, error) {
	cfg = cfg.withDefaults()
	res := RESTLoadResult{Kind: cfg.Kind}
	if target.HTTPURL == "" {
		return res, errors.New("load: the REST scenarios need the server's HTTP URL")
	}
	target.Transport = TransportTCP
	d, err := newDialer(target)
	if err != nil {
		return res, err
	}
	out := newLockedWriter(cfg.Progress)
	extra := cfg.WriteRate*cfg.Duration.Seconds()*1.1 + 64
	capacity := int(math.Ceil((float64(cfg.Messages)+extra)/float64(cfg.Channels))) + 64
	tag := randomTag(4)
	channels := make([]*flowChannel, cfg.Channels)
	for i := range channels {
		channels[i] = newFlowChannel(i, "#r-"+tag+"-"+strconv.Itoa(i), capacity)
	}
	group, err := setupFlow(ctx, flowSetup{
		dialers: []*dialer{d}, nodeOf: func(int) int { return 0 },
		channels: channels, channelOf: func(i int) int { return i },
		clients: cfg.Channels, echo: true, concurrency: 16, timeout: cfg.Timeout, nickPrefix: "r" + tag,
	})
	defer group.release()
	if err != nil {
		return res, err
	}
	p := &pacer{channels: channels, pick: pickFirst, text: restText(100), tick: 5 * time.Millisecond, rng: rand.New(rand.NewPCG(1, 2))}
	seedStart := time.Now()
	stop := startProgress(out, progressInterval, func() string {
		_, ak := counts(group.clients)
		return fmt.Sprintf("%s: seeding: %d/%d stored", cfg.Label, ak, cfg.Messages)
	})
	p.run(ctx, cfg.SeedRate, time.Duration(float64(cfg.Messages)/cfg.SeedRate*float64(time.Second)))
	waitFor(ctx, cfg.Timeout, func() bool {
		_, ak := counts(group.clients)
		return ak >= p.sent.Load()-p.failed.Load()
	})
	stop()
	_, stored := counts(group.clients)
	res.Stored, res.SeedTime = stored, time.Since(seedStart)
	takeTally(group.clients)
	progressf(out, "%s: %d messages stored in %.1fs", cfg.Label, res.Stored, res.SeedTime.Seconds())
	if res.Stored == 0 {
		return res, errors.New("load: no message was stored while seeding")
	}

	paths := restPaths(cfg.Kind, channels, seedStart, res.SeedTime)
	writeCtx, stopWriting := context.WithCancel(ctx)
	writing := make(chan struct{})
	sent0 := p.sent.Load()
	go func() {
		defer close(writing)
		if cfg.WriteRate > 0 {
			p.run(writeCtx, cfg.WriteRate, cfg.Duration)
		}
	}()
	var lag *indexLagProbe
	probing := make(chan struct{})
	if cfg.Kind == RESTSearch && cfg.WriteRate > 0 {
		lag = &indexLagProbe{baseURL: target.HTTPURL, channels: channels, interval: cfg.IndexProbeEvery}
		go func() {
			defer close(probing)
			lag.run(ctx, writeCtx)
		}()
	} else {
		close(probing)
	}
	ph, err := startPhase(out, cfg.ServerCPU, func(el time.Duration) string {
		return fmt.Sprintf("%s: %.0fs of load", cfg.Label, el.Seconds())
	})
	if err != nil {
		stopWriting()
		<-writing
		<-probing
		return res, err
	}
	get, err := RunHTTPGet(ctx, HTTPGetConfig{BaseURL: target.HTTPURL, Paths: paths, Concurrency: cfg.Concurrency, Duration: cfg.Duration, Timeout: cfg.Timeout})
	stopWriting()
	<-writing
	<-probing
	if lag != nil {
		res.IndexLag, res.IndexMissing = SummarizeLatencies(lag.lags), lag.missing
	}
	totals, perr := ph.end()
	res.HTTPGetResult, res.ServerCPU = get, totals.ServerCPU
	res.Written = p.sent.Load() - sent0
	res.WriteEcho = SummarizeLatencies(takeTally(group.clients).echoes)
	progressf(out, "%s: %d requests = %.0f/s, p50 %s p99 %s, %d not OK", cfg.Label, get.Requests, get.RequestsPerSecond,
		roundMs(get.Latency.P50), roundMs(get.Latency.P99), get.Requests-get.OK)
	return res, errors.Join(err, perr)
}

// restPaths is the request mix: for history the newest page of every
// channel and pages before random seconds of the seeding; for search
// newest-first searches for a common word, a rarer one (one the channel
// holds), two words and a word that is nowhere, in every channel.
func restPaths(kind RESTLoadKind, channels []*flowChannel, seedStart time.Time, seedTime time.Duration) []HTTPGetPath {
	r := rand.New(rand.NewPCG(3, 4))
	var paths []HTTPGetPath
	for _, ch := range channels {
		name := url.PathEscape(strings.TrimPrefix(ch.name, "#"))
		q := url.QueryEscape(strings.TrimPrefix(ch.name, "#"))
		switch kind {
		case RESTHistory:
			base := "/api/v1/channels/" + name + "/history?limit=50"
			paths = append(paths, HTTPGetPath{Label: "newest", Path: base, Expect: `"msgid"`})
			for range 4 {
				before := seedStart.Unix() + 1 + r.Int64N(max(int64(seedTime.Seconds()), 1))
				paths = append(paths, HTTPGetPath{Label: "deep", Path: base + "&before=" + strconv.FormatInt(before, 10)})
			}
		case RESTSearch:
			base := "/api/v1/search?channel=" + q + "&q="
			paths = append(paths,
				HTTPGetPath{Label: "common", Path: base + "w3", Expect: `"msgid"`},
				HTTPGetPath{Label: "rare", Path: base + "u" + strconv.Itoa(r.IntN(min(max(ch.next, 1), 1000))), Expect: `"msgid"`},
				HTTPGetPath{Label: "two words", Path: base + "w3+v13", Expect: `"msgid"`},
				HTTPGetPath{Label: "absent", Path: base + "absentword", Expect: `[]`},
			)
		}
	}
	r.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
	return paths
}

// Run converts a B12 or B13 result into a report run.
func (r RESTLoadResult) Run() Run {
	lat := r.Latency
	run := Run{
		Measurements: []Measurement{
			{Name: "requests/s", Value: r.RequestsPerSecond, Latency: &lat},
			{Name: "p99", Unit: "ms", Value: millis(r.Latency.P99)},
			{Name: "not OK", Value: float64(r.Requests - r.OK)},
			{Name: "messages stored", Value: float64(r.Stored)},
		},
		ClientCPU: r.ClientCPU,
		Detail:    r,
	}
	if r.ServerCPU > 0 && r.Requests > 0 {
		run.Measurements = append(run.Measurements, Measurement{Name: "server CPU per request", Unit: "µs", Value: float64(r.ServerCPU.Microseconds()) / float64(r.Requests)})
	}
	if r.Written > 0 {
		w := r.WriteEcho
		run.Measurements = append(run.Measurements, Measurement{Name: "writes during the load", Value: float64(r.Written), Latency: &w})
	}
	if r.IndexLag.Count > 0 || r.IndexMissing > 0 {
		l := r.IndexLag
		run.Measurements = append(run.Measurements,
			Measurement{Name: "index lag p99", Unit: "ms", Value: millis(r.IndexLag.P99), Latency: &l},
			Measurement{Name: "index lag: not found in 10 s", Value: float64(r.IndexMissing)})
	}
	for _, label := range slices.Sorted(maps.Keys(r.ByLabel)) {
		l := r.ByLabel[label]
		run.Notes = append(run.Notes, fmt.Sprintf("%s: %d requests, p50 %s p99 %s", label, l.Count, roundMs(l.P50), roundMs(l.P99)))
	}
	if len(r.FirstFails) > 0 {
		run.Notes = append(run.Notes, "first failures: "+strings.Join(r.FirstFails, " | "))
	}
	return run
}
