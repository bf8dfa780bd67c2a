package load

import (
	"context"
	"testing"
	"time"
)

// BenchmarkSignedMessages runs B6 (10 channels of 10, 3 s per iteration)
// against an in-process node, for profiling the server side:
//
//	go test -run '^$' -bench SignedMessages -benchtime 1x -cpuprofile cpu.out
//
// The profile holds the load client too, told apart by package.
func BenchmarkSignedMessages(b *testing.B) {
	n := startBenchNode(b)
	target := Target{IRCAddr: n.IRCAddr()}
	for b.Loop() {
		res, err := RunSignedMessages(context.Background(), target, SignedMessagesConfig{Duration: 3 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		if res.Rejected > 0 || res.Unanswered > 0 {
			b.Fatalf("%d rejected (%s), %d unanswered", res.Rejected, res.RejectionKinds(), res.Unanswered)
		}
		b.ReportMetric(res.AcceptedPerSecond, "accepted/s")
		b.ReportMetric(float64(res.Latency.P99)/float64(time.Millisecond), "p99-ms")
	}
}

// BenchmarkVerifyLoad runs B7 (1,000 seeded messages, 64 clients, 3 s per
// iteration) against an in-process node.
func BenchmarkVerifyLoad(b *testing.B) {
	n := startBenchNode(b)
	target := Target{IRCAddr: n.IRCAddr(), HTTPURL: "http://" + n.HTTPAddr()}
	for b.Loop() {
		res, err := RunVerifyLoad(context.Background(), target, VerifyLoadConfig{Duration: 3 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		if res.Requests != res.OK {
			b.Fatalf("%d of %d requests not OK: %q", res.Requests-res.OK, res.Requests, res.FirstFails)
		}
		b.ReportMetric(res.RequestsPerSecond, "requests/s")
		b.ReportMetric(float64(res.Latency.P99)/float64(time.Millisecond), "p99-ms")
	}
}
