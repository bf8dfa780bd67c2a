package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
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
}

func (c HTTPGetConfig) withDefaults() HTTPGetConfig {
	if c.Concurrency <= 0 {
		c.Concurrency = 64
	}
	if c.Duration <= 0 {
		c.Duration = 10 * time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
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
}

// RunHTTPGet runs the load described by cfg and returns its measurements.
// It fails only when it cannot run (no paths, no CPU reading) or when ctx
// ends; failed requests are counted in the result.
func RunHTTPGet(ctx context.Context, cfg HTTPGetConfig) (HTTPGetResult, error) {
	cfg = cfg.withDefaults()
	res := HTTPGetResult{Concurrency: cfg.Concurrency}
	if len(cfg.Paths) == 0 {
		return res, errors.New("loadgen: HTTP GET load without paths")
	}
	base := strings.TrimSuffix(cfg.BaseURL, "/")
	client := &http.Client{Transport: &http.Transport{
		MaxIdleConns:        cfg.Concurrency,
		MaxIdleConnsPerHost: cfg.Concurrency,
		MaxConnsPerHost:     cfg.Concurrency,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}}
	defer client.CloseIdleConnections()
	cpuStart, err := ProcessCPU()
	if err != nil {
		return res, err
	}
	var next atomic.Int64
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	workers := make([]*getWorker, cfg.Concurrency)
	var wg sync.WaitGroup
	for w := range workers {
		gw := &getWorker{client: client, base: base, timeout: cfg.Timeout, statuses: map[int]int{}, byLabel: map[string][]time.Duration{}}
		workers[w] = gw
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(deadline) {
				i := next.Add(1) - 1
				gw.request(ctx, cfg.Paths[int(i%int64(len(cfg.Paths)))])
			}
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	cpuEnd, err := ProcessCPU()
	if err != nil {
		return res, err
	}
	res.ClientCPU = cpuEnd - cpuStart
	res.merge(workers)
	if res.Elapsed > 0 {
		res.RequestsPerSecond = float64(res.Requests) / res.Elapsed.Seconds()
	}
	return res, ctx.Err()
}

// getWorker sends requests one after another and keeps its own
// measurements.
type getWorker struct {
	client     *http.Client
	base       string
	timeout    time.Duration
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
