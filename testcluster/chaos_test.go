package testcluster

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// testLogger discards node logs unless PALAVER_TEST_LOG names a level (debug, info, warn, error).
func testLogger() *slog.Logger {
	level := os.Getenv("PALAVER_TEST_LOG")
	if level == "" {
		return nil
	}
	var l slog.Level
	if l.UnmarshalText([]byte(level)) != nil {
		l = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}

// chaosSeed is the seed of the chaos test: 7, or PALAVER_CHAOS_SEED to try others.
func chaosSeed(t *testing.T) int64 {
	text := os.Getenv("PALAVER_CHAOS_SEED")
	if text == "" {
		return 7
	}
	seed, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		t.Fatalf("PALAVER_CHAOS_SEED: %v", err)
	}
	return seed
}

// TestChaos runs the checked workload on three nodes with one round of each fault kind, in
// order: a partition (the seed decides whether the leader is the node cut off), a kill and
// restart, a leadership transfer, a slow disk and poison rows (dead letters on every peer); every check (topics, nicks, modes, pins,
// delivery, state hashes) must pass.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos run")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	seed := chaosSeed(t)
	rep, err := Run(ctx, RunOptions{
		Options:       Options{Nodes: 3, Dir: t.TempDir(), Seed: seed, Logger: testLogger()},
		Duration:      30 * time.Second, // an upper bound: the traffic ends with the fifth round
		EndWithRounds: true,
		Chaos:         true,
		Nemesis: NemesisOptions{
			MinInterval: 1500 * time.Millisecond, MaxInterval: 2500 * time.Millisecond,
			MinDown: 300 * time.Millisecond, MaxDown: 1200 * time.Millisecond,
			MaxRounds: 5,
			Kinds:     []FaultKind{FaultPartition, FaultKill, FaultTransfer, FaultSlowDisk, FaultPoison},
			InOrder:   true,
		},
		DrainTimeout: 15 * time.Second, // a passing run drains at once; a lost message never arrives
		OnEvent:      func(e NemesisEvent) { t.Log(e) },
	})
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	rep.WriteTable(&table)
	t.Logf("\n%s", table.String())
	if rep.Rounds != 5 {
		t.Errorf("nemesis rounds = %d, want 5", rep.Rounds)
	}
	for _, kind := range []string{"partition", "heal", "kill", "restart", "transfer", "slow-disk", "disk-ok", "poison"} {
		if !slices.ContainsFunc(rep.Events, func(e NemesisEvent) bool { return e.Kind == kind }) {
			t.Errorf("no %s event", kind)
		}
	}
	for _, e := range rep.Events {
		if e.Kind == "poison" && e.Err != nil {
			t.Errorf("the poison round failed: %v", e.Err)
		}
	}
	if rep.Topics.Writes == 0 || rep.Topics.Reads == 0 || rep.Delivery.Acked == 0 {
		t.Errorf("the workload did nothing: %d writes, %d reads, %d messages", rep.Topics.Writes, rep.Topics.Reads, rep.Delivery.Acked)
	}
	for _, v := range []*ObjectVerdict{&rep.Nicks, &rep.Modes, &rep.Pins} {
		if v.Writes == 0 || v.Reads == 0 {
			t.Errorf("the %s workload did nothing: %d writes, %d reads", v.Kind, v.Writes, v.Reads)
		}
	}
	if !rep.Passed() {
		var details bytes.Buffer
		rep.WriteDetails(&details, 20)
		t.Fatalf("seed %d: chaos checks failed:\n%s", seed, details.String())
	}
}
