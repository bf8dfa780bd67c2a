package load

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/node"
	"github.com/palaver-chat/palaver/testcluster/nodetest"
)

// startBenchNode starts an in-process node for profiling the server side
// of a scenario (`go test -bench LoginStorm -cpuprofile cpu.out`); the
// profile holds the load client too, told apart by package.
func startBenchNode(b *testing.B) *node.Node {
	b.Helper()
	return nodetest.Start(b, nil)
}

func benchmarkLoginStorm(b *testing.B, curve Curve) {
	n := startBenchNode(b)
	target := Target{IRCAddr: n.IRCAddr()}
	b.ResetTimer()
	res, err := RunLoginStorm(context.Background(), target, LoginStormConfig{Concurrency: 64, Count: b.N, Curve: curve, Keys: 1024})
	if err != nil {
		b.Fatal(err)
	}
	if res.Failed > 0 {
		b.Fatalf("%d logins failed: %q", res.Failed, res.FirstErrors)
	}
	b.ReportMetric(res.LoginsPerSecond, "logins/s")
	b.ReportMetric(float64(res.Latency.P99)/float64(time.Millisecond), "p99-ms")
}

func BenchmarkLoginStormEd25519(b *testing.B)   { benchmarkLoginStorm(b, CurveEd25519) }
func BenchmarkLoginStormSecp256k1(b *testing.B) { benchmarkLoginStorm(b, CurveSecp256k1) }

// BenchmarkIdleSetup measures setting up B1 clients (register and JOIN)
// against an in-process node; the memory figure itself needs a separate
// server process (palaver bench b1 --spawn).
func BenchmarkIdleSetup(b *testing.B) {
	n := startBenchNode(b)
	b.ResetTimer()
	res, err := RunIdle(context.Background(), Target{IRCAddr: n.IRCAddr()}, IdleConfig{
		Clients: b.N, Settle: SettleOptions{Interval: time.Millisecond, QuietSamples: 1, Tolerance: 1 << 40},
		RSS: func() (int64, error) { return ReadRSS(os.Getpid()) },
	})
	if err != nil {
		b.Fatal(err)
	}
	if res.SetupFailed > 0 {
		b.Fatalf("%d clients failed: %s", res.SetupFailed, res.FirstError)
	}
}
