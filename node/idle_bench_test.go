package node

import (
	"context"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/testcluster/load"
)

// BenchmarkIdleConnectionsNode holds B1's idle clients (load.RunIdle) against an in-process
// node and reports the Go heap and goroutine stacks per connection, with the load client's share
// included (one goroutine and one small buffer per client). PALAVER_BENCH_HEAPPROFILE names a
// file for a heap profile taken while the clients are held; read the server's allocation sites
// (gateway/..., node/...) out of it. PALAVER_BENCH_CLIENTS sets the count (default 2000).
func BenchmarkIdleConnectionsNode(b *testing.B) {
	clients := int(envFloat("PALAVER_BENCH_CLIENTS", 2000))
	cfg := LoopbackConfig(b.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	n, err := Start(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatalf("start node: %v", err)
	}
	defer n.Close()
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := load.RunIdle(ctx, load.Target{IRCAddr: n.IRCAddr()}, load.IdleConfig{
			Clients: clients,
			RSS: func() (int64, error) {
				runtime.GC()
				runtime.ReadMemStats(&after)
				if path := os.Getenv("PALAVER_BENCH_HEAPPROFILE"); path != "" {
					f, err := os.Create(path)
					if err != nil {
						return 0, err
					}
					defer f.Close()
					if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
						return 0, err
					}
				}
				return int64(after.HeapInuse+after.StackInuse) / 1024, nil
			},
		})
		if err != nil {
			b.Fatalf("idle: %v", err)
		}
		per := func(a, z uint64) float64 { return (float64(z) - float64(a)) / 1024 / float64(clients) }
		b.ReportMetric(per(before.HeapInuse, after.HeapInuse), "heap-KB/conn")
		b.ReportMetric(per(before.StackInuse, after.StackInuse), "stack-KB/conn")
		b.ReportMetric(float64(runtime.NumGoroutine())/float64(clients), "goroutines/conn")
	}
}
