package rest_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// The benchmarks serve history and search from a fixture store of
// PALAVER_BENCH_MESSAGES messages (default 100,000; the plan's B12 and B13
// ask for 1,000,000), built once per test binary with fsync off: 90% of
// them in #bench, 250 ms apart, eight words each drawn from a Zipf
// distribution over 5,000 words ("w0" is the most common); every 1,000th
// message also holds "needle". The fixture is a temporary file removed at
// exit, unless PALAVER_BENCH_CACHE_DIR names a directory: then it is kept
// there and reused by later runs of the same size (the content is
// deterministic, so the msgids are regenerated, not read back).

const defaultBenchMessages = 100_000

// benchFixtureVersion names the fixture's content in cached file names;
// change it whenever genBenchMessages changes what it produces.
const benchFixtureVersion = 1

var (
	benchOnce   sync.Once
	benchSrv    *rest.Server
	benchPath   string   // the fixture's database file, complete on disk
	benchIDs    []string // msgids of #bench, oldest first
	benchStart  time.Time
	benchDir    string // removed at exit (temporary fixtures only)
	benchErr    error
	benchCloser func()
)

func benchServer(b *testing.B) *rest.Server {
	b.Helper()
	benchOnce.Do(func() { benchErr = buildBench() })
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchSrv
}

// benchMessageCount is PALAVER_BENCH_MESSAGES, or the default.
func benchMessageCount() (int, error) {
	raw := os.Getenv("PALAVER_BENCH_MESSAGES")
	if raw == "" {
		return defaultBenchMessages, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 10_000 {
		return 0, fmt.Errorf("PALAVER_BENCH_MESSAGES=%q: want a whole number of at least 10000", raw)
	}
	return n, nil
}

func buildBench() error {
	n, err := benchMessageCount()
	if err != nil {
		return err
	}
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	cacheDir := os.Getenv("PALAVER_BENCH_CACHE_DIR")
	var done string // marker written once a cached fixture is complete
	if cacheDir == "" {
		if benchDir, err = os.MkdirTemp("", "palaver-rest-bench-"); err != nil {
			return err
		}
		benchPath = filepath.Join(benchDir, "events.db")
	} else {
		if err := os.MkdirAll(cacheDir, 0o700); err != nil {
			return fmt.Errorf("bench cache: %w", err)
		}
		benchPath = filepath.Join(cacheDir, fmt.Sprintf("rest-bench-v%d-%d.db", benchFixtureVersion, n))
		done = benchPath + ".complete"
	}
	cached := false
	if done != "" {
		if _, err := os.Stat(done); err == nil {
			cached = true
		}
	}
	if !cached {
		if done != "" { // an interrupted build leaves files behind: start over
			for _, suffix := range []string{"", "-wal", "-shm"} {
				if err := os.Remove(benchPath + suffix); err != nil && !os.IsNotExist(err) {
					return fmt.Errorf("bench cache: %w", err)
				}
			}
		}
		store, err := eventstore.Open(ctx, eventstore.Options{Path: benchPath, NoSync: true, Logger: quiet})
		if err != nil {
			return err
		}
		built := time.Now()
		benchIDs, err = genBenchMessages(n, func(msgs []*eventstore.Message) error { return store.Append(ctx, msgs...) })
		// Closing checkpoints the write-ahead log, so the database file alone
		// holds the whole fixture and can be copied (BenchmarkSearchWhileWriting).
		if cerr := store.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("building the bench fixture: %w", err)
		}
		fmt.Fprintf(os.Stderr, "bench fixture: %d messages stored in %s (%s)\n", n, time.Since(built).Round(time.Second), benchPath)
		if done != "" {
			if err := os.WriteFile(done, nil, 0o600); err != nil {
				return fmt.Errorf("bench cache: %w", err)
			}
		}
	} else if benchIDs, err = genBenchMessages(n, nil); err != nil {
		return err
	}
	store, err := eventstore.Open(ctx, eventstore.Options{Path: benchPath, NoSync: true, Logger: quiet})
	if err != nil {
		return err
	}
	benchCloser = func() { store.Close() }
	if got, err := store.Count(ctx); err != nil || got != int64(n) {
		return fmt.Errorf("bench fixture %s holds %d messages (%v), want %d; remove it to rebuild", benchPath, got, err, n)
	}
	benchSrv = newBenchRESTServer(store)
	return nil
}

// genBenchMessages generates the fixture's n messages, deterministically,
// and hands them to emit (when not nil) in batches of 2,000. It returns
// the msgids of #bench, oldest first.
func genBenchMessages(n int, emit func([]*eventstore.Message) error) ([]string, error) {
	r := rand.New(rand.NewPCG(7, 11))
	zipf := rand.NewZipf(r, 1.1, 1, 4999)
	entropy := rand.NewChaCha8([32]byte{7})
	benchStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const batch = 2000
	ids := make([]string, 0, n)
	msgs := make([]*eventstore.Message, 0, batch)
	var words strings.Builder
	for i := range n {
		venue := "#bench"
		if r.IntN(10) == 0 {
			venue = fmt.Sprintf("#other%d", r.IntN(10))
		}
		words.Reset()
		for w := range 8 {
			if w > 0 {
				words.WriteByte(' ')
			}
			fmt.Fprintf(&words, "w%d", zipf.Uint64())
		}
		if i%1000 == 999 {
			words.WriteString(" needle")
		}
		at := benchStart.Add(time.Duration(i) * 250 * time.Millisecond)
		id := ulid.MustNew(ulid.Timestamp(at), entropy).String()
		if venue == "#bench" {
			ids = append(ids, id)
		}
		if emit == nil {
			continue
		}
		msgs = append(msgs, &eventstore.Message{
			MsgID: id, Venue: venue, Command: "PRIVMSG", Sender: "bencher!~b@palaver/x", SenderNick: "bencher",
			SenderDID: "did:key:z6MkBench", Text: words.String(), Time: at, Origin: "bench",
			Tags: map[string]string{"+freeq.at/sig": benchSig},
		})
		if len(msgs) == batch || i == n-1 {
			if err := emit(msgs); err != nil {
				return nil, err
			}
			msgs = msgs[:0]
		}
	}
	return ids, nil
}

// benchSig is the signature tag every bench message carries.
var benchSig = "ed25519:AAAAAAAAAAAAAAAAAAAAAA:" + strings.Repeat("A", 86)

// newBenchRESTServer is a REST server over store whose state holds only
// #bench (public), with the rate limits off, as a bench listener runs.
func newBenchRESTServer(store *eventstore.Store) *rest.Server {
	fx := fsm.NewFixture()
	fx.AddChannel(fsm.Channel{Name: "#bench", NoExternal: true, TopicLock: true})
	return rest.New(rest.Config{
		ServerName: "bench.test", BaseURL: "http://bench.test", State: &fakeState{fx: fx}, Events: store,
		RateLimits: rest.RateLimits{Off: true}, Logger: slog.New(slog.DiscardHandler),
	})
}

// serve runs one GET through the handler and fails on a non-200.
func serve(b *testing.B, srv *rest.Server, target string) {
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
	if rec.Code != http.StatusOK {
		b.Fatalf("GET %s: %d %s", target, rec.Code, rec.Body.String())
	}
}

// reportRate adds requests per second (over all goroutines) to the result.
func reportRate(b *testing.B, start time.Time) {
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

// BenchmarkHistory pages #bench: the newest page, a page at a random depth
// by Unix seconds, and by msgid; serially and from parallel clients.
func BenchmarkHistory(b *testing.B) {
	srv := benchServer(b)
	span := int64(len(benchIDs)) // seconds covered, roughly: 4 messages a second overall
	cases := []struct {
		name   string
		target func(r *rand.Rand) string
	}{
		{"newest/limit=50", func(*rand.Rand) string { return "/api/v1/channels/bench/history" }},
		{"newest/limit=200", func(*rand.Rand) string { return "/api/v1/channels/bench/history?limit=200" }},
		{"deep-seconds/limit=200", func(r *rand.Rand) string {
			return fmt.Sprintf("/api/v1/channels/bench/history?limit=200&before=%d", benchStart.Unix()+100+r.Int64N(span/4))
		}},
		{"deep-msgid/limit=200", func(r *rand.Rand) string {
			return "/api/v1/history/bench?limit=200&before=" + benchIDs[1000+r.IntN(len(benchIDs)-1000)]
		}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			start := time.Now()
			for b.Loop() {
				serve(b, srv, tc.target(r))
			}
			reportRate(b, start)
		})
		b.Run(tc.name+"/parallel", func(b *testing.B) {
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				r := rand.New(rand.NewPCG(rand.Uint64(), 3))
				for pb.Next() {
					serve(b, srv, tc.target(r))
				}
			})
			reportRate(b, start)
		})
	}
}

// BenchmarkSearch searches #bench for a rare word, a common word, two
// words, and a word that is nowhere.
func BenchmarkSearch(b *testing.B) {
	srv := benchServer(b)
	for _, q := range []string{"needle", "w1", "w1+w2", "w3+needle", "absent"} {
		target := "/api/v1/search?channel=bench&q=" + q
		b.Run("q="+q, func(b *testing.B) {
			start := time.Now()
			for b.Loop() {
				serve(b, srv, target)
			}
			reportRate(b, start)
		})
		b.Run("q="+q+"/parallel", func(b *testing.B) {
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					serve(b, srv, target)
				}
			})
			reportRate(b, start)
		})
	}
}
