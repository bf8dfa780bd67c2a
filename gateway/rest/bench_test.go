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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/federation/eventstore"
	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// The benchmarks serve history and search from a store of benchMessages
// messages (fsync off), built once per test binary, through the HTTP
// handler (no network): 90% of them in #bench, 250 ms apart, eight words
// each drawn from a Zipf distribution over 5,000 words ("w0" is the most
// common); every 1,000th message also holds "needle".

const benchMessages = 100_000

var (
	benchOnce   sync.Once
	benchSrv    *rest.Server
	benchIDs    []string // msgids of #bench, oldest first
	benchStart  time.Time
	benchDir    string
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

func buildBench() error {
	var err error
	if benchDir, err = os.MkdirTemp("", "palaver-rest-bench-"); err != nil {
		return err
	}
	ctx := context.Background()
	store, err := eventstore.Open(ctx, eventstore.Options{Path: filepath.Join(benchDir, "events.db"), NoSync: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	benchCloser = func() { store.Close() }
	r := rand.New(rand.NewPCG(7, 11))
	zipf := rand.NewZipf(r, 1.1, 1, 4999)
	entropy := rand.NewChaCha8([32]byte{7})
	benchStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const batch = 2000
	msgs := make([]*eventstore.Message, 0, batch)
	var words strings.Builder
	for i := range benchMessages {
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
			benchIDs = append(benchIDs, id)
		}
		msgs = append(msgs, &eventstore.Message{
			MsgID: id, Venue: venue, Command: "PRIVMSG", Sender: "bencher!~b@palaver/x", SenderNick: "bencher",
			SenderDID: "did:key:z6MkBench", Text: words.String(), Time: at, Origin: "bench",
			Tags: map[string]string{"+freeq.at/sig": "ed25519:AAAAAAAAAAAAAAAAAAAAAA:" + strings.Repeat("A", 86)},
		})
		if len(msgs) == batch || i == benchMessages-1 {
			if err := store.Append(ctx, msgs...); err != nil {
				return err
			}
			msgs = msgs[:0]
		}
	}
	st := fsm.NewState()
	st.Channels["#bench"] = &fsm.Channel{Name: "#bench", NoExternal: true, TopicLock: true, Members: map[string]*fsm.Member{}}
	benchSrv = rest.New(rest.Config{
		ServerName: "bench.test", BaseURL: "http://bench.test", State: &fakeState{st: st}, Events: store,
		RateLimits: rest.RateLimits{Off: true}, Logger: slog.New(slog.DiscardHandler),
	})
	return nil
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
