package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// VerifyLoadConfig configures scenario B7: a channel seeded with Messages
// signed PRIVMSGs, then Concurrency HTTP clients asking
// GET /api/v1/verify/{msgid} over keep-alive connections for Duration.
type VerifyLoadConfig struct {
	Messages    int           // signed messages to seed; default 1000
	Concurrency int           // requests in flight; default 64
	Duration    time.Duration // how long to send requests; default 10 s
	Window      int           // seeding: signed messages in flight; default 32
	// Timeout bounds the seeding client's setup, one seeded message's
	// answer and one request; default 10 s.
	Timeout time.Duration
	// ServerCPU, when set, reads the server's CPU time used so far.
	ServerCPU func() (time.Duration, error)
	Progress  io.Writer // progress lines; nil for none
	Label     string    // prefix of progress lines
}

func (c VerifyLoadConfig) withDefaults() VerifyLoadConfig {
	if c.Messages <= 0 {
		c.Messages = 1000
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 64
	}
	if c.Duration <= 0 {
		c.Duration = 10 * time.Second
	}
	if c.Window <= 0 {
		c.Window = 32
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Label == "" {
		c.Label = "B7"
	}
	return c
}

// VerifyLoadResult is the outcome of one B7 run.
type VerifyLoadResult struct {
	Seeded      int           `json:"seeded"` // signed messages stored and echoed
	SeedTime    time.Duration `json:"seed_ns"`
	Concurrency int           `json:"concurrency"`
	// Requests counts the responses received; OK those that were 200 and
	// said verdict valid for the msgid asked about.
	Requests   int           `json:"requests"`
	OK         int           `json:"ok"`
	Non200     int           `json:"non_200"`
	Statuses   map[int]int   `json:"statuses,omitempty"` // non-200 statuses
	NotValid   int           `json:"not_valid"`          // 200 without verdict valid for the right msgid
	Errors     int           `json:"errors"`             // requests without a response (transport errors, timeouts)
	FirstFails []string      `json:"first_failures,omitempty"`
	Elapsed    time.Duration `json:"elapsed_ns"`
	// RequestsPerSecond counts every response; Latency is request →
	// whole body read, over every response.
	RequestsPerSecond float64        `json:"requests_per_second"`
	Latency           LatencySummary `json:"latency"`
	ClientCPU         time.Duration  `json:"client_cpu_ns"`
	ServerCPU         time.Duration  `json:"server_cpu_ns,omitempty"`
}

// verifyPath is the route B7 loads.
const verifyPath = "/api/v1/verify/"

// RunVerifyLoad runs scenario B7. A sender logs in with SASL (an ed25519
// did:key), registers a session key, joins a fresh channel and sends
// Messages signed PRIVMSGs (Window in flight), keeping the msgid of each
// one echoed; it stays in the channel, so the channel exists, while
// Concurrency workers request the verification of those msgids in turn
// for Duration over keep-alive HTTP/1.1 connections. A response counts OK
// when it is 200 and its JSON says "verdict":"valid" for the msgid asked
// about (the body is searched, not decoded, to keep the client cheap).
func RunVerifyLoad(ctx context.Context, target Target, cfg VerifyLoadConfig) (VerifyLoadResult, error) {
	cfg = cfg.withDefaults()
	res := VerifyLoadResult{Concurrency: cfg.Concurrency}
	if target.HTTPURL == "" {
		return res, errors.New("loadgen: B7 needs the server's HTTP URL")
	}
	base := strings.TrimSuffix(target.HTTPURL, "/")
	target.Transport = TransportTCP // the seeding speaks plain IRC
	d, err := newDialer(target)
	if err != nil {
		return res, err
	}
	out := newLockedWriter(cfg.Progress)

	seedStart := time.Now()
	sender, msgids, err := seedSignedMessages(ctx, d, cfg)
	if sender != nil {
		holdCtx, stopHolding := context.WithCancel(ctx)
		held := make(chan struct{})
		go func() {
			defer close(held)
			holdIdle(holdCtx, sender.conn)
		}()
		defer func() {
			quitCtx, cancel := context.WithTimeout(context.Background(), quitWait)
			defer cancel()
			_ = sender.conn.writeLines(quitCtx, "QUIT :benchmark done")
			select {
			case <-held:
			case <-quitCtx.Done():
			}
			stopHolding()
			<-held
		}()
	}
	if err != nil {
		return res, err
	}
	res.Seeded, res.SeedTime = len(msgids), time.Since(seedStart)
	progressf(out, "%s: %d signed messages seeded in %.1fs", cfg.Label, res.Seeded, res.SeedTime.Seconds())

	serverCPU := cfg.ServerCPU
	if serverCPU == nil {
		serverCPU = func() (time.Duration, error) { return 0, nil }
	}
	client := verifyHTTPClient(d, cfg)
	defer client.CloseIdleConnections()
	cpuStart, err := ProcessCPU()
	if err != nil {
		return res, err
	}
	serverCPUStart, err := serverCPU()
	if err != nil {
		return res, err
	}
	var next, done atomic.Int64
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	stopProgress := startProgress(out, progressInterval, func() string {
		el := time.Since(start).Seconds()
		n := done.Load()
		return fmt.Sprintf("%s: %.0fs %d requests (%.0f/s)", cfg.Label, el, n, float64(n)/el)
	})
	workers := make([]*verifyWorker, cfg.Concurrency)
	var wg sync.WaitGroup
	for w := range workers {
		vw := &verifyWorker{client: client, base: base, timeout: cfg.Timeout, statuses: map[int]int{}}
		workers[w] = vw
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(deadline) {
				i := next.Add(1) - 1
				vw.request(ctx, msgids[int(i)%len(msgids)])
				done.Add(1)
			}
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
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
	res.merge(workers)
	if res.Elapsed > 0 {
		res.RequestsPerSecond = float64(res.Requests) / res.Elapsed.Seconds()
	}
	progressf(out, "%s: %d requests in %.2fs = %.0f/s, p50 %s p99 %s, %d non-200, %d not valid, %d errors",
		cfg.Label, res.Requests, res.Elapsed.Seconds(), res.RequestsPerSecond,
		res.Latency.P50.Round(time.Microsecond), res.Latency.P99.Round(time.Microsecond), res.Non200, res.NotValid, res.Errors)
	return res, ctx.Err()
}

// seedSignedMessages sets up one signing sender in a fresh channel and has
// it send cfg.Messages signed PRIVMSGs; every one must be accepted. The
// sender is returned (connected, joined, unread) whenever it was set up.
func seedSignedMessages(ctx context.Context, d *dialer, cfg VerifyLoadConfig) (*signingSender, []string, error) {
	signers, err := GenerateSigners(CurveEd25519, 1)
	if err != nil {
		return nil, nil, err
	}
	tag := randomTag(4)
	id := &identity{signer: signers[0], did: signers[0].DID()}
	sender, err := setupSigningSender(ctx, d, id, "b7s"+tag, "#b7-"+tag, cfg.Timeout)
	if err != nil {
		return nil, nil, fmt.Errorf("loadgen: seeding sender: %w", err)
	}
	st := sender.stream(ctx, streamOptions{
		window: cfg.Window, limit: cfg.Messages, timeout: cfg.Timeout, keepIDs: true,
		body: benchBody("b7 ", 100),
	})
	if st.err != nil || st.accepted != cfg.Messages {
		return sender, nil, fmt.Errorf("loadgen: seeding: %d of %d signed messages accepted, %d rejected (%s), %d unanswered; error: %v",
			st.accepted, cfg.Messages, st.rejected(), strings.Join(st.firstRejections, " | "), st.unanswered, st.err)
	}
	return sender, st.msgids, nil
}

// verifyHTTPClient keeps one connection per worker alive, dialled from
// the target's source addresses in turn.
func verifyHTTPClient(d *dialer, cfg VerifyLoadConfig) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			i := int(d.next.Add(1)-1) % len(d.tcp)
			return d.tcp[i].DialContext(ctx, network, addr)
		},
		MaxIdleConns:        cfg.Concurrency,
		MaxIdleConnsPerHost: cfg.Concurrency,
		MaxConnsPerHost:     cfg.Concurrency,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}}
}

// verifyWorker sends requests one after another and keeps its own
// measurements.
type verifyWorker struct {
	client     *http.Client
	base       string
	timeout    time.Duration
	body       bytes.Buffer
	latencies  []time.Duration
	ok         int
	statuses   map[int]int
	notValid   int
	errors     int
	firstFails []string
}

var verdictValid = []byte(`"verdict":"valid"`)

func (w *verifyWorker) request(ctx context.Context, msgid string) {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.base+verifyPath+msgid, nil)
	if err != nil {
		w.fail(err.Error())
		return
	}
	start := time.Now()
	resp, err := w.client.Do(req)
	if err != nil {
		w.fail(err.Error())
		return
	}
	w.body.Reset()
	_, err = w.body.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		w.fail("reading the body: " + err.Error())
		return
	}
	w.latencies = append(w.latencies, time.Since(start))
	body := w.body.Bytes()
	switch {
	case resp.StatusCode != http.StatusOK:
		w.statuses[resp.StatusCode]++
		w.note(fmt.Sprintf("%s: %d %s", msgid, resp.StatusCode, truncateBytes(body, 200)))
	case !bytes.Contains(body, verdictValid) || !bytes.Contains(body, []byte(`"msgid":"`+msgid+`"`)):
		w.notValid++
		w.note(fmt.Sprintf("%s: 200 without a valid verdict for it: %s", msgid, truncateBytes(body, 200)))
	default:
		w.ok++
	}
}

func (w *verifyWorker) fail(msg string) {
	w.errors++
	w.note(msg)
}

func (w *verifyWorker) note(msg string) {
	if len(w.firstFails) < maxFirstErrors {
		w.firstFails = append(w.firstFails, msg)
	}
}

func truncateBytes(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

func (r *VerifyLoadResult) merge(workers []*verifyWorker) {
	var all []time.Duration
	r.Statuses = map[int]int{}
	for _, w := range workers {
		all = append(all, w.latencies...)
		r.OK += w.ok
		r.NotValid += w.notValid
		r.Errors += w.errors
		for code, n := range w.statuses {
			r.Statuses[code] += n
			r.Non200 += n
		}
		for _, f := range w.firstFails {
			if len(r.FirstFails) < maxFirstErrors {
				r.FirstFails = append(r.FirstFails, f)
			}
		}
	}
	if len(r.Statuses) == 0 {
		r.Statuses = nil
	}
	r.Requests = len(all)
	r.Latency = SummarizeLatencies(all)
}

// StatusKinds lists the non-200 statuses as "status=n" in a stable order.
func (r VerifyLoadResult) StatusKinds() string {
	var parts []string
	for _, code := range slices.Sorted(maps.Keys(r.Statuses)) {
		parts = append(parts, strconv.Itoa(code)+"="+strconv.Itoa(r.Statuses[code]))
	}
	return strings.Join(parts, ", ")
}
