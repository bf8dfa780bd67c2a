package rest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/testcluster/load"
)

// B12 and B13 of the benchmark plan, through the real HTTP stack: the REST
// handler behind a net/http server on a loopback listener (as the node
// serves it), loaded by a client in its own process (this test binary run
// again as TestHTTPLoadClient, with load.RunHTTPGet), so the client's
// CPU is measured apart from the server's and a -cpuprofile shows the
// server alone. Each benchmark call is one load of PALAVER_BENCH_DURATION
// (default 3 s); run with -benchtime=1x and -count=3 for three runs.
//
//	PALAVER_BENCH_MESSAGES=1000000 PALAVER_BENCH_CACHE_DIR=/tmp/palaver-bench-cache \
//	  PALAVER_BENCH_DURATION=10s go test -run '^$' -bench 'HTTP|WhileWriting' \
//	  -benchtime=1x -count=3 -timeout 60m ./gateway/rest/

// loadClientEnv names the file holding the load client's configuration; it
// is set only in the load client's process.
const loadClientEnv = "PALAVER_HTTPLOAD_CONFIG"

// loadClientJob is what the load client process reads and writes.
type loadClientJob struct {
	Config     load.HTTPGetConfig `json:"config"`
	ResultPath string             `json:"result_path"`
}

// TestHTTPLoadClient is the load client process of the HTTP benchmarks;
// without loadClientEnv it does nothing.
func TestHTTPLoadClient(t *testing.T) {
	path := os.Getenv(loadClientEnv)
	if path == "" {
		t.Skip("the HTTP benchmarks' load client; runs only when they start it")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var job loadClientJob
	if err := json.Unmarshal(raw, &job); err != nil {
		t.Fatal(err)
	}
	res, err := load.RunHTTPGet(context.Background(), job.Config)
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(job.ResultPath, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// benchDuration is PALAVER_BENCH_DURATION, or 3 s.
func benchDuration(b *testing.B) time.Duration {
	raw := os.Getenv("PALAVER_BENCH_DURATION")
	if raw == "" {
		return 3 * time.Second
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d <= 0 {
		b.Fatalf("PALAVER_BENCH_DURATION=%q: want a positive duration", raw)
	}
	return d
}

// serveLoopback serves srv on a fresh loopback listener, configured as the
// node configures its HTTP server, until the benchmark ends.
func serveLoopback(b *testing.B, srv *rest.Server) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			b.Error(err)
		}
	}()
	b.Cleanup(func() {
		hs.Close()
		<-served
	})
	return "http://" + ln.Addr().String()
}

// checkPaths asks for each distinct path once, before the load, and fails
// unless every answer is a 200 JSON array holding the expected text; it
// logs the size of each answer.
func checkPaths(b *testing.B, base string, paths []load.HTTPGetPath) {
	b.Helper()
	seen := map[string]bool{}
	var answers []string
	for _, p := range paths {
		if seen[p.Label] {
			continue
		}
		seen[p.Label] = true
		resp, err := http.Get(base + p.Path)
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			b.Fatal(err)
		}
		var items []json.RawMessage
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &items) != nil || !strings.Contains(string(body), p.Expect) {
			b.Fatalf("GET %s: %d %.300s", p.Path, resp.StatusCode, body)
		}
		answers = append(answers, fmt.Sprintf("%s %d items/%d bytes", p.Label, len(items), len(body)))
	}
	b.Logf("answers: %s", strings.Join(answers, ", "))
}

// loadOutcome is one load's client result and the server process's CPU
// time over it.
type loadOutcome struct {
	load.HTTPGetResult
	ServerCPU time.Duration
	Wall      time.Duration // from starting the client process to its exit
}

// runLoadClient runs cfg in a load client process and waits for its result.
func runLoadClient(b *testing.B, cfg load.HTTPGetConfig) loadOutcome {
	b.Helper()
	dir := b.TempDir()
	job := loadClientJob{Config: cfg, ResultPath: filepath.Join(dir, "result.json")}
	raw, err := json.Marshal(job)
	if err != nil {
		b.Fatal(err)
	}
	jobPath := filepath.Join(dir, "job.json")
	if err := os.WriteFile(jobPath, raw, 0o600); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Duration+2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHTTPLoadClient$", "-test.count=1")
	cmd.Env = append(os.Environ(), loadClientEnv+"="+jobPath)
	cpuStart, err := load.ProcessCPU()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	wall := time.Since(start)
	if err != nil {
		b.Fatalf("load client: %v\n%s", err, out)
	}
	cpuEnd, err := load.ProcessCPU()
	if err != nil {
		b.Fatal(err)
	}
	raw, err = os.ReadFile(job.ResultPath)
	if err != nil {
		b.Fatalf("load client result: %v\n%s", err, out)
	}
	o := loadOutcome{ServerCPU: cpuEnd - cpuStart, Wall: wall}
	if err := json.Unmarshal(raw, &o.HTTPGetResult); err != nil {
		b.Fatal(err)
	}
	if failed := o.Requests - o.OK; failed > 0 || o.Errors > 0 {
		b.Errorf("%d of %d answers were not OK (%d non-200, %d unexpected), %d errors; first: %s",
			failed, o.Requests, o.Non200, o.Unexpected, o.Errors, strings.Join(o.FirstFails, " | "))
	}
	return o
}

// report puts a load's figures on the benchmark's result line and its
// per-label latencies in the log.
func (o loadOutcome) report(b *testing.B) {
	b.ReportMetric(o.RequestsPerSecond, "req/s")
	b.ReportMetric(ms(o.Latency.P50), "p50-ms")
	b.ReportMetric(ms(o.Latency.P99), "p99-ms")
	b.ReportMetric(o.ClientCPU.Seconds()/o.Elapsed.Seconds(), "client-cores")
	b.ReportMetric(o.ServerCPU.Seconds()/o.Wall.Seconds(), "server-cores")
	if o.Requests > 0 { // robust to a busy machine: the server's CPU per answer
		b.ReportMetric(float64(o.ServerCPU.Microseconds())/float64(o.Requests), "server-µs/req")
	}
	b.ReportMetric(0, "ns/op") // one timed load per call: the figures above are the result
	b.Logf("%d requests in %.2fs, %d clients: %.0f/s, p50 %s p90 %s p99 %s max %s; client CPU %s, server CPU %s over %s",
		o.Requests, o.Elapsed.Seconds(), o.Concurrency, o.RequestsPerSecond, o.Latency.P50, o.Latency.P90, o.Latency.P99, o.Latency.Max,
		o.ClientCPU.Round(time.Millisecond), o.ServerCPU.Round(time.Millisecond), o.Wall.Round(time.Millisecond))
	for label, l := range o.ByLabel {
		b.Logf("  %-12s %7d requests, p50 %s p99 %s max %s", label, l.Count, l.P50, l.P99, l.Max)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkHistoryHTTP is B12: GET /api/v1/channels/bench/history?limit=50
// from 64 keep-alive clients, for the newest page and for pages at random
// depths (before = a random second of the channel's first quarter).
func BenchmarkHistoryHTTP(b *testing.B) {
	srv := benchServer(b)
	base := serveLoopback(b, srv)
	const history = "/api/v1/channels/bench/history?limit=50"
	r := rand.New(rand.NewPCG(5, 6))
	deep := make([]load.HTTPGetPath, 1000)
	for i := range deep {
		before := benchStart.Unix() + 100 + r.Int64N(int64(len(benchIDs))/4)
		deep[i] = load.HTTPGetPath{Label: "deep", Path: fmt.Sprintf("%s&before=%d", history, before), Expect: `"msgid"`}
	}
	for _, bc := range []struct {
		name  string
		paths []load.HTTPGetPath
	}{
		{"newest", []load.HTTPGetPath{{Label: "newest", Path: history, Expect: `"msgid"`}}},
		{"deep", deep},
	} {
		b.Run(bc.name+"/clients=64", func(b *testing.B) {
			checkPaths(b, base, bc.paths[:1])
			runLoadClient(b, load.HTTPGetConfig{
				BaseURL: base, Paths: bc.paths, Concurrency: 64, Duration: benchDuration(b),
			}).report(b)
		})
	}
}

// searchMix is B13's query mix over #bench: a rare word, a very common
// word, two common words, a common and a rare word, and a word that is
// nowhere. Each is a newest-first search of the default limit (25).
var searchMix = []load.HTTPGetPath{
	{Label: "needle", Path: "/api/v1/search?channel=bench&q=needle", Expect: `"msgid"`},
	{Label: "w1", Path: "/api/v1/search?channel=bench&q=w1", Expect: `"msgid"`},
	{Label: "w1+w2", Path: "/api/v1/search?channel=bench&q=w1+w2", Expect: `"msgid"`},
	{Label: "w3+needle", Path: "/api/v1/search?channel=bench&q=w3+needle", Expect: `"msgid"`},
	{Label: "absent", Path: "/api/v1/search?channel=bench&q=absent", Expect: `[]`},
}

// BenchmarkSearchWhileWriting is B13: newest-first searches of #bench
// (searchMix in turn) from 1, 8 and 64 keep-alive clients, while a writer
// appends 100-byte messages to #bench at PALAVER_BENCH_WRITE_RATE per
// second (default 1,000) with fsync on, one message per Append from up to
// 256 concurrent callers, into a copy of the fixture. Every 10th written
// message holds a unique word; as soon as its Append returns (it is
// durable), a prober searches for that word over HTTP until the message is
// found: the index lag is the time from Append's return to that answer.
func BenchmarkSearchWhileWriting(b *testing.B) {
	benchServer(b)
	for _, clients := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			store := openLiveCopy(b)
			base := serveLoopback(b, newBenchRESTServer(store))
			checkPaths(b, base, searchMix)
			w := startBenchWriter(b, store, base)
			o := runLoadClient(b, load.HTTPGetConfig{
				BaseURL: base, Paths: searchMix, Concurrency: clients, Duration: benchDuration(b),
			})
			lag := w.stop(b)
			o.report(b)
			lag.report(b)
		})
	}
}

// openLiveCopy copies the fixture's database file and opens the copy with
// fsync on, as a node opens its store.
func openLiveCopy(b *testing.B) *eventstore.Store {
	b.Helper()
	path := filepath.Join(b.TempDir(), "events.db")
	if err := copyFile(benchPath, path); err != nil {
		b.Fatal(err)
	}
	store, err := eventstore.Open(context.Background(), eventstore.Options{Path: path, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	return store
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return fmt.Errorf("copy %s: %w", from, err)
	}
	return dst.Close()
}

// benchWriteRate is PALAVER_BENCH_WRITE_RATE, or 1,000 messages a second.
func benchWriteRate(b *testing.B) int {
	raw := os.Getenv("PALAVER_BENCH_WRITE_RATE")
	if raw == "" {
		return 1000
	}
	var n int
	if _, err := fmt.Sscan(raw, &n); err != nil || n <= 0 {
		b.Fatalf("PALAVER_BENCH_WRITE_RATE=%q: want a positive number", raw)
	}
	return n
}

const (
	probeEvery   = 10  // one written message in probeEvery is probed
	maxProbes    = 256 // concurrent probes
	maxAppenders = 256 // concurrent Append calls
	probeTimeout = 10 * time.Second
)

// probe is a written message to look for: its unique word, msgid, and
// when its Append returned.
type probe struct {
	word, msgid string
	durable     time.Time
}

// benchWriter appends at a steady rate and probes the search index.
type benchWriter struct {
	cancel   context.CancelFunc
	done     sync.WaitGroup
	start    time.Time
	written  atomic.Int64
	failed   atomic.Int64
	mu       sync.Mutex
	lags     []time.Duration
	delays   []time.Duration // Append call → return
	polls    int             // searches the probes needed in all
	missed   int             // probes not found within probeTimeout
	firstErr string
}

func startBenchWriter(b *testing.B, store *eventstore.Store, base string) *benchWriter {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &benchWriter{cancel: cancel, start: time.Now()}
	probes := make(chan probe, 4096)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: maxProbes, DisableCompression: true}}
	var probing sync.WaitGroup
	probing.Go(func() { // each probe on its own goroutine, so probes never wait for each other
		slots := make(chan struct{}, maxProbes)
		for p := range probes {
			slots <- struct{}{}
			probing.Go(func() {
				defer func() { <-slots }()
				w.runProbe(client, base, p)
			})
		}
	})
	w.done.Go(func() {
		defer func() {
			close(probes)
			probing.Wait()
			client.CloseIdleConnections()
		}()
		w.write(ctx, store, benchWriteRate(b), probes)
	})
	return w
}

// write appends one message per interval until ctx ends, each from its
// own goroutine (at most maxAppenders at once), so group commit can batch
// them; it waits for the Appends in flight before returning.
func (w *benchWriter) write(ctx context.Context, store *eventstore.Store, rate int, probes chan<- probe) {
	interval := time.Second / time.Duration(rate)
	slots := make(chan struct{}, maxAppenders)
	var appending sync.WaitGroup
	defer appending.Wait()
	filler := strings.Repeat("w1 w7 w42 w3 w250 w9 w1234 w2 ", 4)
	for i := 0; ctx.Err() == nil; i++ {
		if d := time.Until(w.start.Add(time.Duration(i) * interval)); d > 0 {
			select { // pacing the writer, not synchronizing with it
			case <-time.After(d):
			case <-ctx.Done():
				return
			}
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		word := fmt.Sprintf("lag%08d", i)
		now := time.Now()
		m := &eventstore.Message{
			MsgID: ulid.MustNew(ulid.Timestamp(now), ulid.DefaultEntropy()).String(), Venue: "#bench", Command: "PRIVMSG",
			Sender: "writer!~w@palaver/x", SenderNick: "writer", SenderDID: "did:key:z6MkWriter",
			Text: (word + " " + filler)[:100], Time: now, Origin: "bench", Tags: map[string]string{"+freeq.at/sig": benchSig},
		}
		appending.Go(func() {
			defer func() { <-slots }()
			called := time.Now()
			if err := store.Append(context.Background(), m); err != nil {
				w.failed.Add(1)
				w.note(err.Error())
				return
			}
			durable := time.Now()
			w.written.Add(1)
			w.mu.Lock()
			w.delays = append(w.delays, durable.Sub(called))
			w.mu.Unlock()
			if i%probeEvery == 0 {
				probes <- probe{word: word, msgid: m.MsgID, durable: durable}
			}
		})
	}
}

// runProbe searches for p's word until the answer holds p's message.
func (w *benchWriter) runProbe(client *http.Client, base string, p probe) {
	url := base + "/api/v1/search?channel=bench&q=" + p.word
	for polls := 1; ; polls++ {
		found, err := searchHolds(client, url, p.msgid)
		if err != nil {
			w.note(err.Error())
		}
		if found {
			lag := time.Since(p.durable)
			w.mu.Lock()
			w.lags = append(w.lags, lag)
			w.polls += polls
			w.mu.Unlock()
			return
		}
		if time.Since(p.durable) > probeTimeout {
			w.mu.Lock()
			w.missed++
			w.mu.Unlock()
			return
		}
	}
}

func searchHolds(client *http.Client, url, msgid string) (bool, error) {
	resp, err := client.Get(url)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, err
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("probe %s: %d %.200s", url, resp.StatusCode, body)
	}
	return strings.Contains(string(body), `"msgid":"`+msgid+`"`), nil
}

func (w *benchWriter) note(msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.firstErr == "" {
		w.firstErr = msg
	}
}

// writerOutcome is what the writer and its probes measured.
type writerOutcome struct {
	rate                  float64
	written, failed       int64
	lag, delay            load.LatencySummary
	meanPolls             float64
	missed                int
	firstErr              string
	probesWithLag, probes int
}

// stop ends the writing, waits for the Appends and probes in flight and
// summarizes them.
func (w *benchWriter) stop(b *testing.B) writerOutcome {
	b.Helper()
	w.cancel()
	w.done.Wait()
	elapsed := time.Since(w.start)
	w.mu.Lock()
	defer w.mu.Unlock()
	o := writerOutcome{
		rate: float64(w.written.Load()) / elapsed.Seconds(), written: w.written.Load(), failed: w.failed.Load(),
		lag: load.SummarizeLatencies(w.lags), delay: load.SummarizeLatencies(w.delays),
		missed: w.missed, firstErr: w.firstErr, probes: len(w.lags) + w.missed,
	}
	if len(w.lags) > 0 {
		o.meanPolls = float64(w.polls) / float64(len(w.lags))
	}
	if o.failed > 0 || o.missed > 0 || o.firstErr != "" {
		b.Errorf("writer: %d appends failed, %d probes never found; first error: %s", o.failed, o.missed, o.firstErr)
	}
	return o
}

func (o writerOutcome) report(b *testing.B) {
	b.ReportMetric(o.rate, "written/s")
	b.ReportMetric(ms(o.lag.P50), "lag-p50-ms")
	b.ReportMetric(ms(o.lag.P99), "lag-p99-ms")
	b.Logf("writer: %d messages durable (%.0f/s), Append p50 %s p99 %s; %d probes: lag p50 %s p99 %s max %s, %.2f searches per probe",
		o.written, o.rate, o.delay.P50, o.delay.P99, o.probes, o.lag.P50, o.lag.P99, o.lag.Max, o.meanPolls)
}
