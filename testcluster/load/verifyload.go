package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// VerifyLoadConfig configures scenario B7: a channel seeded with Messages
// signed PRIVMSGs, then Concurrency HTTP clients asking
// GET /api/v1/verify/{msgid} over keep-alive connections for Duration.
type VerifyLoadConfig struct {
	Messages    int           // signed messages to seed; default 1000
	Concurrency int           // requests in flight; default 64
	Duration    time.Duration // how long to send requests; default 10 s
	Window      int           // seeding: signed messages in flight; default 32
	// Timeout bounds the seeding client's setup, one seeded message's
	// answer and one request; default 10 s.
	Timeout time.Duration
	// ServerCPU, when set, reads the server's CPU time used so far.
	ServerCPU func() (time.Duration, error)
	Progress  io.Writer // progress lines; nil for none
	Label     string    // prefix of progress lines
}

func (c VerifyLoadConfig) withDefaults() VerifyLoadConfig {
	orDefault(&c.Messages, 1000)
	orDefault(&c.Concurrency, 64)
	orDefault(&c.Duration, 10*time.Second)
	orDefault(&c.Window, 32)
	orDefault(&c.Timeout, 10*time.Second)
	labelOr(&c.Label, "B7")
	return c
}

// VerifyLoadResult is the outcome of one B7 run.
type VerifyLoadResult struct {
	Seeded      int           `json:"seeded"` // signed messages stored and echoed
	SeedTime    time.Duration `json:"seed_ns"`
	Concurrency int           `json:"concurrency"`
	// Requests counts the responses received; OK those that were 200 and
	// said verdict valid for the msgid asked about.
	Requests   int           `json:"requests"`
	OK         int           `json:"ok"`
	Non200     int           `json:"non_200"`
	Statuses   map[int]int   `json:"statuses,omitempty"` // non-200 statuses
	NotValid   int           `json:"not_valid"`          // 200 without verdict valid for the right msgid
	Errors     int           `json:"errors"`             // requests without a response (transport errors, timeouts)
	FirstFails []string      `json:"first_failures,omitempty"`
	Elapsed    time.Duration `json:"elapsed_ns"`
	// RequestsPerSecond counts every response; Latency is request →
	// whole body read, over every response.
	RequestsPerSecond float64        `json:"requests_per_second"`
	Latency           LatencySummary `json:"latency"`
	ClientCPU         time.Duration  `json:"client_cpu_ns"`
	ServerCPU         time.Duration  `json:"server_cpu_ns,omitempty"`
}

// verifyPath is the route B7 loads.
const verifyPath = "/api/v1/verify/"

// RunVerifyLoad runs scenario B7. A sender logs in with SASL (an ed25519
// did:key), registers a session key, joins a fresh channel and sends
// Messages signed PRIVMSGs (Window in flight), keeping the msgid of each
// one echoed; it stays in the channel, so the channel exists, while
// Concurrency workers request the verification of those msgids in turn
// for Duration over keep-alive HTTP/1.1 connections. A response counts OK
// when it is 200 and its JSON says "verdict":"valid" for the msgid asked
// about (the body is searched, not decoded, to keep the client cheap).
func RunVerifyLoad(ctx context.Context, target Target, cfg VerifyLoadConfig) (VerifyLoadResult, error) {
	cfg = cfg.withDefaults()
	res := VerifyLoadResult{Concurrency: cfg.Concurrency}
	if target.HTTPURL == "" {
		return res, errors.New("load: B7 needs the server's HTTP URL")
	}
	base := strings.TrimSuffix(target.HTTPURL, "/")
	target.Transport = TransportTCP // the seeding speaks plain IRC
	d, err := newDialer(target)
	if err != nil {
		return res, err
	}
	out := newLockedWriter(cfg.Progress)

	seedStart := time.Now()
	sender, msgids, err := seedSignedMessages(ctx, d, cfg)
	if sender != nil {
		holdCtx, stopHolding := context.WithCancel(ctx)
		held := make(chan struct{})
		go func() {
			defer close(held)
			holdIdle(holdCtx, sender.conn)
		}()
		defer func() {
			quitCtx, cancel := context.WithTimeout(context.Background(), quitWait)
			defer cancel()
			_ = sender.conn.writeLines(quitCtx, "QUIT :benchmark done")
			select {
			case <-held:
			case <-quitCtx.Done():
			}
			stopHolding()
			<-held
		}()
	}
	if err != nil {
		return res, err
	}
	res.Seeded, res.SeedTime = len(msgids), time.Since(seedStart)
	progressf(out, "%s: %d signed messages seeded in %.1fs", cfg.Label, res.Seeded, res.SeedTime.Seconds())

	paths := make([]HTTPGetPath, len(msgids))
	for i, id := range msgids {
		paths[i] = HTTPGetPath{Label: "verify", Path: verifyPath + id, Expect: `"msgid":"` + id + `"`}
	}
	get, err := RunHTTPGet(ctx, HTTPGetConfig{
		BaseURL: base, Paths: paths, Concurrency: cfg.Concurrency, Duration: cfg.Duration, Timeout: cfg.Timeout,
		ExpectEvery: `"verdict":"valid"`, SourceAddrs: target.SourceAddrs,
		ServerCPU: cfg.ServerCPU, Progress: out, Label: cfg.Label,
	})
	res.fromHTTPGet(get)
	if err != nil {
		return res, err
	}
	progressf(out, "%s: %d requests in %.2fs = %.0f/s, p50 %s p99 %s, %d non-200, %d not valid, %d errors",
		cfg.Label, res.Requests, res.Elapsed.Seconds(), res.RequestsPerSecond,
		res.Latency.P50.Round(time.Microsecond), res.Latency.P99.Round(time.Microsecond), res.Non200, res.NotValid, res.Errors)
	return res, ctx.Err()
}

// fromHTTPGet copies the load's measurements into the result: a 200
// without the valid verdict for its msgid counts as NotValid.
func (r *VerifyLoadResult) fromHTTPGet(get HTTPGetResult) {
	r.Requests, r.OK, r.Non200, r.Statuses = get.Requests, get.OK, get.Non200, get.Statuses
	r.NotValid, r.Errors, r.FirstFails = get.Unexpected, get.Errors, get.FirstFails
	r.Elapsed, r.RequestsPerSecond, r.Latency = get.Elapsed, get.RequestsPerSecond, get.Latency
	r.ClientCPU, r.ServerCPU = get.ClientCPU, get.ServerCPU
}

// seedSignedMessages sets up one signing sender in a fresh channel and has
// it send cfg.Messages signed PRIVMSGs; every one must be accepted. The
// sender is returned (connected, joined, unread) whenever it was set up.
func seedSignedMessages(ctx context.Context, d *dialer, cfg VerifyLoadConfig) (*signingSender, []string, error) {
	signers, err := GenerateSigners(CurveEd25519, 1)
	if err != nil {
		return nil, nil, err
	}
	tag := randomTag(4)
	id := &identity{signer: signers[0], did: signers[0].DID()}
	sender, err := setupSigningSender(ctx, d, id, "b7s"+tag, "#b7-"+tag, cfg.Timeout)
	if err != nil {
		return nil, nil, fmt.Errorf("load: seeding sender: %w", err)
	}
	st := sender.stream(ctx, streamOptions{
		window: cfg.Window, limit: cfg.Messages, timeout: cfg.Timeout, keepIDs: true,
		body: benchBody("b7 ", 100),
	})
	if st.err != nil || st.accepted != cfg.Messages {
		return sender, nil, fmt.Errorf("load: seeding: %d of %d signed messages accepted, %d rejected (%s), %d unanswered; error: %v",
			st.accepted, cfg.Messages, st.rejected(), strings.Join(st.firstRejections, " | "), st.unanswered, st.err)
	}
	return sender, st.msgids, nil
}

func truncateBytes(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// StatusKinds lists the non-200 statuses as "status=n" in a stable order.
func (r VerifyLoadResult) StatusKinds() string {
	var parts []string
	for _, code := range slices.Sorted(maps.Keys(r.Statuses)) {
		parts = append(parts, strconv.Itoa(code)+"="+strconv.Itoa(r.Statuses[code]))
	}
	return strings.Join(parts, ", ")
}
