package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"
)

// HTTPGetPath is one request of an HTTP GET load: the path (with its
// query) asked for, the label its latencies are reported under, and a
// substring a 200 body must hold to count as OK ("" accepts any body).
type HTTPGetPath struct {
	Label  string `json:"label"`
	Path   string `json:"path"`
	Expect string `json:"expect,omitempty"`
}

// HTTPGetConfig configures a closed-loop load of GET requests against one
// HTTP server, as the history and search scenarios (B12, B13) need:
// Concurrency workers, each on its own keep-alive HTTP/1.1 connection,
// send the requests of Paths in turn (one shared round robin) for
// Duration.
type HTTPGetConfig struct {
	BaseURL     string        `json:"base_url"` // e.g. "http://127.0.0.1:8080"
	Paths       []HTTPGetPath `json:"paths"`
	Concurrency int           `json:"concurrency"` // default 64
	Duration    time.Duration `json:"duration_ns"` // default 10 s
	Timeout     time.Duration `json:"timeout_ns"`  // one request; default 10 s
	// ExpectEvery, when set, must be in every 200 body too.
	ExpectEvery string `json:"expect_every,omitempty"`
	// SourceAddrs are local addresses to connect from, in turn.
	SourceAddrs []netip.Addr `json:"source_addrs,omitempty"`
	// ServerCPU, when set, reads the server's CPU time used so far.
	ServerCPU func() (time.Duration, error) `json:"-"`
	Progress  io.Writer                     `json:"-"` // progress lines; nil for none
	Label     string                        `json:"-"` // prefix of progress lines
}

func (c HTTPGetConfig) withDefaults() HTTPGetConfig {
	orDefault(&c.Concurrency, 64)
	orDefault(&c.Duration, 10*time.Second)
	orDefault(&c.Timeout, 10*time.Second)
	labelOr(&c.Label, "GET")
	return c
}

// HTTPGetResult is the outcome of one HTTP GET load.
type HTTPGetResult struct {
	Concurrency int `json:"concurrency"`
	// Requests counts the responses received; OK those that were 200 and
	// held their path's Expect.
	Requests   int           `json:"requests"`
	OK         int           `json:"ok"`
	Non200     int           `json:"non_200"`
	Statuses   map[int]int   `json:"statuses,omitempty"` // non-200 statuses
	Unexpected int           `json:"unexpected"`         // 200 without the expected substring
	Errors     int           `json:"errors"`             // requests without a response
	FirstFails []string      `json:"first_failures,omitempty"`
	Elapsed    time.Duration `json:"elapsed_ns"`
	// RequestsPerSecond counts every response; Latency is request → whole
	// body read, over every response, and ByLabel the same per path label.
	RequestsPerSecond float64                   `json:"requests_per_second"`
	Latency           LatencySummary            `json:"latency"`
	ByLabel           map[string]LatencySummary `json:"by_label,omitempty"`
	// ClientCPU is this process's CPU time during the load; it is the load
	// client's own only when the server runs in another process.
	ClientCPU time.Duration `json:"client_cpu_ns"`
	ServerCPU time.Duration `json:"server_cpu_ns,omitempty"` // when HTTPGetConfig.ServerCPU is set
}

// RunHTTPGet runs the load described by cfg and returns its measurements.
// It fails only when it cannot run (no paths, no CPU reading) or when ctx
// ends; failed requests are counted in the result.
func RunHTTPGet(ctx context.Context, cfg HTTPGetConfig) (HTTPGetResult, error) {
	cfg = cfg.withDefaults()
	res := HTTPGetResult{Concurrency: cfg.Concurrency}
	if len(cfg.Paths) == 0 {
		return res, errors.New("load: HTTP GET load without paths")
	}
	base := strings.TrimSuffix(cfg.BaseURL, "/")
	client := httpGetClient(cfg)
	defer client.CloseIdleConnections()
	var next, done atomic.Int64
	workers := make([]*getWorker, cfg.Concurrency)
	for w := range workers {
		workers[w] = &getWorker{client: client, base: base, timeout: cfg.Timeout, every: []byte(cfg.ExpectEvery),
			statuses: map[int]int{}, byLabel: map[string][]time.Duration{}}
	}
	ph, err := startPhase(newLockedWriter(cfg.Progress), cfg.ServerCPU, func(el time.Duration) string {
		n := done.Load()
		return fmt.Sprintf("%s: %.0fs %d requests (%.0f/s)", cfg.Label, el.Seconds(), n, perSecond(n, el))
	})
	if err != nil {
		return res, err
	}
	closedLoop(ctx, cfg.Concurrency, time.Now().Add(cfg.Duration), func(w int) bool {
		i := next.Add(1) - 1
		workers[w].request(ctx, cfg.Paths[int(i%int64(len(cfg.Paths)))])
		done.Add(1)
		return true
	})
	totals, err := ph.end()
	if err != nil {
		return res, err
	}
	res.Elapsed, res.ClientCPU, res.ServerCPU = totals.Elapsed, totals.ClientCPU, totals.ServerCPU
	res.merge(workers)
	res.RequestsPerSecond = perSecond(int64(res.Requests), res.Elapsed)
	return res, ctx.Err()
}

// httpGetClient keeps one connection per worker alive, dialled from the
// source addresses in turn.
func httpGetClient(cfg HTTPGetConfig) *http.Client {
	tr := &http.Transport{
		MaxIdleConns:        cfg.Concurrency,
		MaxIdleConnsPerHost: cfg.Concurrency,
		MaxConnsPerHost:     cfg.Concurrency,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	if len(cfg.SourceAddrs) > 0 {
		var next atomic.Uint64
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			src := cfg.SourceAddrs[int(next.Add(1)-1)%len(cfg.SourceAddrs)]
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: src.AsSlice()}}
			return d.DialContext(ctx, network, addr)
		}
	}
	return &http.Client{Transport: tr}
}

// getWorker sends requests one after another and keeps its own
// measurements.
type getWorker struct {
	client     *http.Client
	base       string
	timeout    time.Duration
	every      []byte // must be in every 200 body
	body       bytes.Buffer
	byLabel    map[string][]time.Duration
	ok         int
	statuses   map[int]int
	unexpected int
	errors     int
	firstFails []string
}

func (w *getWorker) request(ctx context.Context, p HTTPGetPath) {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.base+p.Path, nil)
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
	w.byLabel[p.Label] = append(w.byLabel[p.Label], time.Since(start))
	body := w.body.Bytes()
	switch {
	case resp.StatusCode != http.StatusOK:
		w.statuses[resp.StatusCode]++
		w.note(fmt.Sprintf("%s: %d %s", p.Path, resp.StatusCode, truncateBytes(body, 200)))
	case p.Expect != "" && !bytes.Contains(body, []byte(p.Expect)):
		w.unexpected++
		w.note(fmt.Sprintf("%s: 200 without %q: %s", p.Path, p.Expect, truncateBytes(body, 200)))
	case len(w.every) > 0 && !bytes.Contains(body, w.every):
		w.unexpected++
		w.note(fmt.Sprintf("%s: 200 without %q: %s", p.Path, w.every, truncateBytes(body, 200)))
	default:
		w.ok++
	}
}

func (w *getWorker) fail(msg string) {
	w.errors++
	w.note(msg)
}

func (w *getWorker) note(msg string) {
	if len(w.firstFails) < maxFirstErrors {
		w.firstFails = append(w.firstFails, msg)
	}
}

func (r *HTTPGetResult) merge(workers []*getWorker) {
	var all []time.Duration
	byLabel := map[string][]time.Duration{}
	r.Statuses = map[int]int{}
	for _, w := range workers {
		for label, ds := range w.byLabel {
			all = append(all, ds...)
			byLabel[label] = append(byLabel[label], ds...)
		}
		r.OK += w.ok
		r.Unexpected += w.unexpected
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
	if len(byLabel) > 1 {
		r.ByLabel = make(map[string]LatencySummary, len(byLabel))
		for label, ds := range byLabel {
			r.ByLabel[label] = SummarizeLatencies(ds)
		}
	}
}
