package testcluster

import (
	"bytes"
	"context"
	"log/slog"
	"os"
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

// TestChaosKillRestart runs the checked workload on three nodes with three kill/restart rounds
// (the seed makes some of them hit the leader) and requires every check to pass.
func TestChaosKillRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos run")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rep, err := Run(ctx, RunOptions{
		Options:  Options{Nodes: 3, Dir: t.TempDir(), Seed: 7, Logger: testLogger()},
		Duration: 18 * time.Second,
		Chaos:    true,
		Nemesis: NemesisOptions{
			MinInterval: 2 * time.Second, MaxInterval: 3 * time.Second,
			MinDown: 300 * time.Millisecond, MaxDown: 1200 * time.Millisecond,
			MaxRounds: 3,
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
	if rep.Rounds != 3 {
		t.Errorf("nemesis rounds = %d, want 3", rep.Rounds)
	}
	if rep.Topics.Writes == 0 || rep.Topics.Reads == 0 || rep.Delivery.Acked == 0 {
		t.Errorf("the workload did nothing: %d writes, %d reads, %d messages", rep.Topics.Writes, rep.Topics.Reads, rep.Delivery.Acked)
	}
	if !rep.Passed() {
		var details bytes.Buffer
		rep.WriteDetails(&details, 20)
		t.Fatalf("chaos checks failed:\n%s", details.String())
	}
}
