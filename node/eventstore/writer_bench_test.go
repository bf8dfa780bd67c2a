package eventstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkAppendPaced measures durable appends the way the IRC edge makes them (B11): 64
// connections send at a fixed total rate, and each connection's messages that fell due while its
// previous call was being committed go in its next call (the connection's pipeline). It reports the
// p99 of a message's wait from its due time to its acknowledgement, the process's CPU per message
// and the messages per commit: at a rate the writer keeps up with, how well one commit is shared is
// what the CPU per message depends on.
func BenchmarkAppendPaced(b *testing.B) {
	const callers = 64
	for _, rate := range []int{4000, 16000, 32000} {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			s, _ := openTestStore(b, false)
			text := strings.Repeat("x", 100)
			var id atomic.Int64
			var mu sync.Mutex
			var delays []time.Duration
			duration := time.Duration(b.N) * time.Second / time.Duration(rate) // b.N messages in all
			commitsBefore := s.wal.completed.Load()
			cpuBefore := processCPU(b)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for c := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					interval := time.Second * callers / time.Duration(rate)
					next := start.Add(interval * time.Duration(c) / callers) // callers spread over one interval
					end := start.Add(duration)
					local := make([]time.Duration, 0, 256)
					var due []time.Time
					var msgs []*Message
					for next.Before(end) {
						now := time.Now()
						if now.Before(next) {
							time.Sleep(next.Sub(now))
							continue
						}
						due, msgs = due[:0], msgs[:0]
						for !next.After(now) && next.Before(end) {
							i := id.Add(1)
							msgs = append(msgs, newMsg(fmt.Sprintf("p%09d", i), fmt.Sprintf("#c%d", c), at(time.Duration(i)*time.Millisecond), text))
							due = append(due, next)
							next = next.Add(interval)
						}
						if err := s.Append(context.Background(), msgs...); err != nil {
							b.Error(err)
							return
						}
						acked := time.Now()
						for _, d := range due {
							local = append(local, acked.Sub(d))
						}
					}
					mu.Lock()
					delays = append(delays, local...)
					mu.Unlock()
				}()
			}
			wg.Wait()
			b.StopTimer()
			commits := s.wal.completed.Load() - commitsBefore
			cpu := processCPU(b) - cpuBefore
			n := max(1, len(delays))
			b.ReportMetric(float64(len(delays))/time.Since(start).Seconds(), "msgs/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/msg")
			b.ReportMetric(float64(n)/float64(max(1, commits)), "msgs/commit")
			b.ReportMetric(float64(percentile(delays, 0.5).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(percentile(delays, 0.99).Microseconds())/1000, "p99-ms")
		})
	}
}
