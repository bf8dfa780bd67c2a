package node

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/testcluster/load"
)

// BenchmarkFanOutNode runs the B3/B11 load (load.RunFanout) against an in-process node, so that
// `go test -bench FanOutNode -cpuprofile/-blockprofile/-mutexprofile` profiles the whole message
// path (read, store, fan-out, write) in one process. The load client shares the process: read its
// own entries (testcluster/load) out of the profile. One iteration is one fixed-rate step.
//
//	PALAVER_BENCH_RATE       messages/s of the step (default 200)
//	PALAVER_BENCH_MEMBERS    channel size (default 1000)
//	PALAVER_BENCH_CHANNELS   channels (default 1)
//	PALAVER_BENCH_ACKS       set: measure echoes to the senders (B11) instead of deliveries
//	PALAVER_BENCH_DURATION   sending time of the step (default 5s)
func BenchmarkFanOutNode(b *testing.B) {
	rate := envFloat("PALAVER_BENCH_RATE", 200)
	members := int(envFloat("PALAVER_BENCH_MEMBERS", 1000))
	channels := int(envFloat("PALAVER_BENCH_CHANNELS", 1))
	duration, err := time.ParseDuration(envOr("PALAVER_BENCH_DURATION", "5s"))
	if err != nil {
		b.Fatalf("PALAVER_BENCH_DURATION: %v", err)
	}
	cfg := LoopbackConfig(b.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	n, err := Start(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatalf("start node: %v", err)
	}
	defer n.Close()
	for b.Loop() {
		var ios [][2]int64 // /proc/self/io syscw, syscr at each ServerCPU reading: the step's start and end
		res, err := load.RunFanout(ctx, load.Target{IRCAddr: n.IRCAddr()}, load.FanoutConfig{
			Channels: channels, ChannelSize: members, RandomSenders: channels > 1,
			Acks: os.Getenv("PALAVER_BENCH_ACKS") != "",
			ServerCPU: func() (time.Duration, error) {
				ios = append(ios, processIO(b))
				return processCPU(b), nil
			},
			Ramp: load.RampConfig{StartRate: rate, Steps: 1, StepDuration: duration, P99Limit: time.Hour},
		})
		if err != nil {
			b.Fatalf("fan-out: %v", err)
		}
		for _, st := range res.Steps {
			b.ReportMetric(st.DeliveriesPerSecond, "deliveries/s")
			b.ReportMetric(st.AcksPerSecond, "acks/s")
			b.ReportMetric(float64(st.Latency.P99)/1e6, "p99-ms")
			b.ReportMetric(float64(st.Echo.P99)/1e6, "echo-p99-ms")
			b.ReportMetric(float64(st.ServerCPU)/1e3/float64(max(1, st.Delivered+st.Acked)), "cpu-µs/delivery")
			if len(ios) >= 2 {
				first, last := ios[0], ios[len(ios)-1]
				b.ReportMetric(float64(last[0]-first[0])/float64(max(1, st.Delivered+st.Acked)), "writes/delivery")
				b.ReportMetric(float64(last[1]-first[1])/float64(max(1, st.Delivered+st.Acked)), "reads/delivery")
			}
			b.ReportMetric(float64(st.Delivered), "delivered")
			b.ReportMetric(float64(st.Expected), "owed")
		}
	}
}

// processCPU is the CPU time (user and system) this process used so far: server and load client.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processIO reads the write and read system call counts of this process from /proc/self/io.
func processIO(b *testing.B) [2]int64 {
	raw, err := os.ReadFile("/proc/self/io")
	if err != nil {
		b.Fatalf("read /proc/self/io: %v", err)
	}
	var out [2]int64
	for _, line := range strings.Split(string(raw), "\n") {
		name, value, _ := strings.Cut(line, ": ")
		n, _ := strconv.ParseInt(value, 10, 64)
		switch name {
		case "syscw":
			out[0] = n
		case "syscr":
			out[1] = n
		}
	}
	return out
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envFloat(name string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil && v > 0 {
		return v
	}
	return def
}
