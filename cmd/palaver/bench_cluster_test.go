package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// asPalaverEnv makes the test binary behave as the palaver command, so
// that --spawn-cluster can start it as `palaver serve`.
const asPalaverEnv = "PALAVER_TEST_BINARY_AS_PALAVER"

func TestMain(m *testing.M) {
	if os.Getenv(asPalaverEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

func TestRunBenchClusterUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"cluster scenario without a cluster", []string{"b8"}},
		{"cluster scenario with --spawn", []string{"b8", "--spawn"}},
		{"four nodes", []string{"b8", "--spawn-cluster", "4"}},
		{"spawned and listed", []string{"b8", "--spawn-cluster", "3", "--cluster-irc", "a:1,b:1", "--cluster-http", "http://a,http://b"}},
		{"lists of different lengths", []string{"b9", "--cluster-irc", "a:1,b:1", "--cluster-http", "http://a"}},
		{"cluster flags on a one-server scenario", []string{"b2", "--spawn-cluster", "3"}},
		{"leader kill without spawning", []string{"b10", "--cluster-irc", "a:1,b:1", "--cluster-http", "http://a,http://b"}},
		{"leader kill with clients on the leader", []string{"b10", "--spawn-cluster", "3", "--placement", "any"}},
		{"kill after the end", []string{"b10", "--spawn-cluster", "3", "--duration", "2s", "--kill-after", "3s"}},
		{"unknown change kind", []string{"b8", "--spawn-cluster", "3", "--kinds", "topic,kick"}},
		{"unknown placement", []string{"b15", "--spawn-cluster", "3", "--placement", "middle"}},
		{"pprof ports without a spawned cluster", []string{"b8", "--cluster-irc", "a:1,b:1", "--cluster-http", "http://a,http://b", "--cluster-pprof"}},
		{"no rate", []string{"b15", "--spawn-cluster", "3", "--rate", "0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := runBench(context.Background(), tt.args, &stdout, &stderr); code != 2 {
				t.Errorf("exit code %d, want 2; stderr: %s", code, stderr.String())
			}
		})
	}
}

// TestRunBenchLeaderKillOnSpawnedCluster runs B10 once, tiny, on three
// spawned processes of this test binary: it checks that the cluster forms,
// the leader's process is killed and the report counts no lost change.
func TestRunBenchLeaderKillOnSpawnedCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns three server processes")
	}
	t.Setenv(asPalaverEnv, "1")
	t.Setenv("TMPDIR", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	args := []string{"b10", "--spawn-cluster", "3", "--server-bin", os.Args[0], "--writers", "2",
		"--duration", "1500ms", "--kill-after", "300ms", "--runs", "1", "--json", "--cluster-pprof"}
	if code := runBench(ctx, args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
	}
	var out struct {
		Reports []struct {
			Scenario string `json:"scenario"`
			Metrics  []struct {
				Name   string    `json:"name"`
				Values []float64 `json:"values"`
			} `json:"metrics"`
			Runs []struct {
				Detail struct {
					Kill struct {
						Node      string `json:"node"`
						NewLeader string `json:"new_leader"`
						Error     string `json:"error"`
					} `json:"kill"`
					LossChecked int `json:"loss_checked"`
				} `json:"detail"`
			} `json:"runs"`
		} `json:"reports"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || len(out.Reports) != 1 || len(out.Reports[0].Runs) != 1 {
		t.Fatalf("output %v:\n%s", err, stdout.String())
	}
	if n := strings.Count(stderr.String(), "/debug/pprof/"); n != 3 {
		t.Errorf("--cluster-pprof: %d nodes announced a profile address, want 3; stderr:\n%s", n, stderr.String())
	}
	r := out.Reports[0]
	kill := r.Runs[0].Detail.Kill
	if r.Scenario != "B10" || kill.Node == "" || kill.NewLeader == "" || kill.NewLeader == kill.Node || kill.Error != "" {
		t.Errorf("kill %+v; stderr:\n%s", kill, stderr.String())
	}
	if r.Runs[0].Detail.LossChecked != 2 {
		t.Errorf("loss checked for %d of 2 writers; stderr:\n%s", r.Runs[0].Detail.LossChecked, stderr.String())
	}
	for _, m := range r.Metrics {
		if m.Name == "acknowledged changes lost" && m.Values[0] != 0 {
			t.Errorf("%v acknowledged changes lost", m.Values)
		}
	}
}
