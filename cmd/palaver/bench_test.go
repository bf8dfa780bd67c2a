package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/testcluster/nodetest"
)

func TestRunBenchUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"no scenario", nil, 2},
		{"unknown scenario", []string{"b99"}, 2},
		{"help", []string{"help"}, 0},
		{"scenario help", []string{"b2", "--help"}, 0},
		{"stray argument", []string{"b2", "extra"}, 2},
		{"B1 without a way to read memory", []string{"b1", "--clients", "5"}, 2},
		{"spawn and pid together", []string{"b1", "--spawn", "--server-pid", "1"}, 2},
		{"bad transport", []string{"b2", "--transport", "udp"}, 2},
		{"bad curve", []string{"b2", "--curve", "p256"}, 2},
		{"zero runs", []string{"b2", "--runs", "0"}, 2},
		{"B3 without members", []string{"b3", "--members", "0"}, 2},
		{"B3 with a negative fixed rate", []string{"b3", "--rates", "100,-5"}, 2},
		{"B3 with a fixed rate that is no number", []string{"b3", "--rates", "100,fast"}, 2},
		{"B3 with a NaN fixed rate", []string{"b3", "--rates", "NaN"}, 2},
		{"B3 with an empty fixed rate", []string{"b3", "--rates", "100,,400"}, 2},
		{"CPU profile in a missing directory", []string{"b2", "--cpu-profile", filepath.Join(t.TempDir(), "missing", "cpu.pprof"), "--target", "127.0.0.1:1", "--runs", "1"}, 2},
		// Past validation: fixed rates accepted, the run fails to connect (exit 1).
		{"B3 with fixed rates", []string{"b3", "--rates", "100, 190,400", "--target", "127.0.0.1:1", "--runs", "1"}, 1},
		// Past validation: the run itself fails to connect (exit 1), not a usage error (2).
		{"B3 with more members than the default 1,000", []string{"b3", "--members", "1200", "--target", "127.0.0.1:1", "--runs", "1", "--steps", "1"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := runBench(context.Background(), tt.args, &stdout, &stderr); code != tt.code {
				t.Errorf("exit code %d, want %d; stderr: %s", code, tt.code, stderr.String())
			}
		})
	}
}

func TestRunBenchLoginStormJSON(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := nodetest.Start(t, nil)

	var stdout, stderr bytes.Buffer
	profile := filepath.Join(t.TempDir(), "cpu.pprof")
	args := []string{"b2", "--target", n.IRCAddr(), "--count", "10", "--concurrency", "4", "--keys", "4", "--runs", "2", "--json",
		"--cpu-profile", profile}
	if code := runBench(ctx, args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
	}
	// A CPU profile is a gzipped protocol buffer (go tool pprof reads it).
	if b, err := os.ReadFile(profile); err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("--cpu-profile wrote %d bytes (%v), want a gzipped profile", len(b), err)
	}
	var out struct {
		Reports []struct {
			Scenario string `json:"scenario"`
			Command  string `json:"command"`
			Runs     []any  `json:"runs"`
			Metrics  []struct {
				Name   string    `json:"name"`
				Values []float64 `json:"values"`
			} `json:"metrics"`
		} `json:"reports"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout.String())
	}
	r := out.Reports[0]
	if r.Scenario != "B2" || len(r.Runs) != 2 || !strings.HasPrefix(r.Command, "palaver bench b2 --target ") {
		t.Errorf("report %+v", r)
	}
	for _, m := range r.Metrics {
		if m.Name == "failed logins" && (m.Values[0] != 0 || m.Values[1] != 0) {
			t.Errorf("failed logins %v; stderr:\n%s", m.Values, stderr.String())
		}
	}
}

func TestQuoteArgs(t *testing.T) {
	got := quoteArgs([]string{"b1", "--clients", "10", "--server-arg", "--motd=a b", "--tls-addr", ""})
	want := `b1 --clients 10 --server-arg "--motd=a b" --tls-addr ""`
	if got != want {
		t.Errorf("quoteArgs = %s, want %s", got, want)
	}
}
