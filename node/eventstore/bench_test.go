package eventstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// benchVenue holds 90% of a fixture's messages; the rest go to ten other venues.
const benchVenue = "#bench"

// buildFixture stores n messages (fsync off) 250 ms apart, so several share each second. Texts are
// eight words drawn from a Zipf distribution over a 5,000-word vocabulary ("w0" is the most common),
// and every 1,000th message also holds the word "needle".
func buildFixture(b *testing.B, n int) *Store {
	b.Helper()
	s, _ := openTestStore(b, true)
	r := rand.New(rand.NewPCG(7, 11))
	zipf := rand.NewZipf(r, 1.1, 1, 4999)
	const batch = 2000
	msgs := make([]*Message, 0, batch)
	var words strings.Builder
	for i := range n {
		venue := benchVenue
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
		msgs = append(msgs, newMsg(fmt.Sprintf("b%08d", i), venue, at(time.Duration(i)*250*time.Millisecond), words.String()))
		if len(msgs) == batch || i == n-1 {
			mustAppend(b, s, msgs...)
			msgs = msgs[:0]
		}
	}
	return s
}

// BenchmarkAppendGroupCommit measures durable appends (fsync on) of 100-byte messages, one message
// per call, by 1, 64 and 256 concurrent callers, and reports the throughput and the p99 of the
// per-call store delay (B11), and the process's CPU time per message (cpu-µs/msg: the writer's
// goroutine is most of it; unlike the throughput it hardly moves when other work shares the
// machine). The nosync case shows how much of that is the disk.
func BenchmarkAppendGroupCommit(b *testing.B) {
	for _, bc := range []struct {
		callers int
		noSync  bool
	}{{1, false}, {64, false}, {256, false}, {256, true}} {
		name := fmt.Sprintf("callers=%d", bc.callers)
		if bc.noSync {
			name += "-nosync" // the CPU ceiling, without the disk
		}
		callers := bc.callers
		b.Run(name, func(b *testing.B) {
			s, _ := openTestStore(b, bc.noSync)
			ctx := context.Background()
			text := strings.Repeat("x", 100)
			var next atomic.Int64
			var mu sync.Mutex
			var delays []time.Duration
			work := func(n func() bool) {
				local := make([]time.Duration, 0, 1024)
				for n() {
					i := next.Add(1)
					m := newMsg(fmt.Sprintf("a%09d", i), benchVenue, at(time.Duration(i)*time.Millisecond), text)
					start := time.Now()
					if err := s.Append(ctx, m); err != nil {
						b.Error(err)
						return
					}
					local = append(local, time.Since(start))
				}
				mu.Lock()
				delays = append(delays, local...)
				mu.Unlock()
			}
			b.ResetTimer()
			cpuBefore := processCPU(b)
			if callers == 1 {
				work(b.Loop)
			} else {
				b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
				b.RunParallel(func(pb *testing.PB) { work(pb.Next) })
			}
			b.StopTimer()
			cpu := processCPU(b) - cpuBefore
			b.ReportMetric(float64(len(delays))/b.Elapsed().Seconds(), "msgs/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(max(1, len(delays))), "cpu-µs/msg")
			b.ReportMetric(float64(percentile(delays, 0.99).Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkPageBeforeUnix measures the REST history page (limit 50) over 100k stored messages (or
// EVENTSTORE_BENCH_MESSAGES).
func BenchmarkPageBeforeUnix(b *testing.B) {
	n := benchMessages(b)
	s := buildFixture(b, n)
	ctx := context.Background()
	middle := at(time.Duration(n/2) * 250 * time.Millisecond).Unix()
	for _, bc := range []struct {
		name   string
		before int64
	}{{"newest", 0}, {"middle", middle}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				page, err := s.PageBeforeUnix(ctx, benchVenue, bc.before, 50)
				if err != nil || len(page) != 50 {
					b.Fatalf("page: %d, %v", len(page), err)
				}
			}
		})
		b.Run(bc.name+"/parallel", func(b *testing.B) {
			b.SetParallelism(32)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.PageBeforeUnix(ctx, benchVenue, bc.before, 50); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// benchMessagesEnv sets the size of the search and paging fixtures (default 100,000): B13 is
// defined at 1M (EVENTSTORE_BENCH_MESSAGES=1000000; seeding takes about half a minute).
const benchMessagesEnv = "EVENTSTORE_BENCH_MESSAGES"

func benchMessages(b *testing.B) int {
	b.Helper()
	v := os.Getenv(benchMessagesEnv)
	if v == "" {
		return 100_000
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1000 {
		b.Fatalf("%s=%q: want a number of messages >= 1000", benchMessagesEnv, v)
	}
	return n
}

// BenchmarkSearchNewestFirst measures Search (limit 25) for a very common word, a rare one, two
// words, and a word of another venue (B13), over 100k stored messages or EVENTSTORE_BENCH_MESSAGES,
// and reports the p99 of single searches. (Searching while messages are written is B13 over
// HTTP: BenchmarkSearchWhileWriting in gateway/rest.)
func BenchmarkSearchNewestFirst(b *testing.B) {
	s := buildFixture(b, benchMessages(b))
	ctx := context.Background()
	queries := []struct{ name, query string }{
		{"common", "w1"},
		{"rare", "needle"},
		{"two-words", "w1 w2"},
		{"absent", "nosuchword"},
	}
	for _, bc := range queries {
		b.Run(bc.name, func(b *testing.B) {
			delays := make([]time.Duration, 0, 1<<16)
			for b.Loop() {
				start := time.Now()
				if _, err := s.Search(ctx, benchVenue, bc.query, 0, 25); err != nil {
					b.Fatal(err)
				}
				delays = append(delays, time.Since(start))
			}
			b.ReportMetric(float64(percentile(delays, 0.99).Microseconds())/1000, "p99-ms")
		})
	}
}

// processCPU is the user and system CPU time the process has used so far.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(float64(len(ds))*p))]
}

// BenchmarkSearchWhileWriting is B13 at the store level: newest-first searches (limit 25, rotating
// over four queries) over the fixture while one caller appends a message every millisecond (one
// commit, so one new FTS segment, each). It reports the searches' p99, the FTS segments alive
// (fts-segments: the mean of a sample taken every 64 searches), and the appends done.
// Sub-benchmarks set FTS5's automerge (how many segments of a level trigger a merge; 4 is
// SQLite's default).
func BenchmarkSearchWhileWriting(b *testing.B) {
	for _, automerge := range []int{4, 2, 8} {
		b.Run(fmt.Sprintf("automerge=%d", automerge), func(b *testing.B) {
			s := buildFixture(b, benchMessages(b))
			ctx := context.Background()
			if _, err := s.writeDB.ExecContext(ctx, `INSERT INTO messages_fts(messages_fts, rank) VALUES ('automerge', ?)`, automerge); err != nil {
				b.Fatal(err)
			}
			stop := make(chan struct{})
			var appended atomic.Int64
			var wg sync.WaitGroup
			wg.Go(func() {
				tick := time.NewTicker(time.Millisecond)
				defer tick.Stop()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					case <-tick.C:
					}
					m := newMsg(fmt.Sprintf("live%09d", i), benchVenue, time.Now(), fmt.Sprintf("w%d w%d live%d", i%7, i%5000, i))
					if err := s.Append(ctx, m); err != nil {
						b.Error(err)
						return
					}
					appended.Add(1)
				}
			})
			queries := []string{"w1", "needle", "w1 w2", "w4000"}
			delays := make([]time.Duration, 0, 1<<16)
			var segments, samples int
			i := 0
			for b.Loop() {
				if i%64 == 0 {
					segments += ftsSegments(b, s)
					samples++
				}
				start := time.Now()
				if _, err := s.Search(ctx, benchVenue, queries[i%len(queries)], 0, 25); err != nil {
					b.Fatal(err)
				}
				delays = append(delays, time.Since(start))
				i++
			}
			close(stop)
			wg.Wait()
			b.ReportMetric(float64(percentile(delays, 0.99).Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(segments)/float64(samples), "fts-segments")
			b.ReportMetric(float64(appended.Load())/b.Elapsed().Seconds(), "appends/s")
		})
	}
}

// ftsSegments counts the search index's segments: its data rows' ids carry the segment id above
// bit 37 (FTS5_SEGMENT_ROWID); ids below are the structure and averages records.
func ftsSegments(b *testing.B, s *Store) int {
	b.Helper()
	var n int
	// The index's leaves are rowids ordered by segment: one skip per segment, not a scan of pages.
	if err := s.readDB.QueryRow(`SELECT COUNT(DISTINCT id >> 37) FROM messages_fts_data WHERE id >= 1 << 37`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}
