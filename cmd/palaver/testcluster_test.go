package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTestClusterFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"help", []string{"--help"}, 0, "Usage: palaver testcluster"},
		{"no nodes", []string{"--nodes", "0"}, 2, "must be positive"},
		{"chaos needs a quorum", []string{"--nodes", "2", "--chaos"}, 2, "at least 3 nodes"},
		{"stray argument", []string{"extra"}, 2, "unexpected argument"},
		{"bad log level", []string{"--log", "loud"}, 2, "--log"},
		{"negative pin clients", []string{"--pin-clients", "-1"}, 2, "must not be negative"},
		{"unknown flag", []string{"--partitions"}, 2, "flag provided but not defined"},
		{"unknown fault kind", []string{"--faults", "kill,meteor"}, 2, `fault kind "meteor"`},
		{"partitions need the nodes in-process", []string{"--processes", "--chaos", "--faults", "partition", "--server-bin", "/nonexistent/palaver"}, 2, "only kill and upgrade rounds"},
		{"upgrades need processes", []string{"--chaos", "--faults", "upgrade"}, 2, "upgrade rounds need the nodes as processes"},
		{"an upgrade is not partitioned", []string{"--upgrade-from", "/nonexistent/palaver", "--faults", "upgrade,partition"}, 2, "only kill and upgrade rounds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runTestCluster(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tt.code, stderr.String())
			}
			if !strings.Contains(stdout.String()+stderr.String(), tt.want) {
				t.Errorf("output lacks %q:\n%s%s", tt.want, stdout.String(), stderr.String())
			}
		})
	}
}

// TestTestClusterQuietRun runs one node without chaos for a moment: every check passes and the
// verdict table is printed.
func TestTestClusterQuietRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	viz := filepath.Join(t.TempDir(), "history.html")
	code := runTestCluster(ctx, []string{"--nodes", "1", "--duration", "2s", "--seed", "3", "--dir", t.TempDir(), "--viz", viz}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit code = %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"acknowledged state changes lost", "topic ops linearizable", "nick ops linearizable", "mode ops linearizable",
		"pin ops linearizable", "acknowledged messages lost / duplicated", "state hashes equal", "PASS"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("verdict table lacks %q:\n%s", want, stdout.String())
		}
	}
	for _, name := range []string{"history.html", "history-nick.html", "history-mode.html", "history-pin.html"} {
		if info, err := os.Stat(filepath.Join(filepath.Dir(viz), name)); err != nil || info.Size() == 0 {
			t.Errorf("--viz did not write %s: %v", name, err)
		}
	}
	if !strings.Contains(stderr.String(), "seed 3") {
		t.Errorf("progress does not name the seed:\n%s", stderr.String())
	}
}

// TestTestClusterProcesses runs three nodes as separate processes (this test binary acting as
// palaver, see TestMain) with one kill -9 and restart round: every check passes.
func TestTestClusterProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three server processes")
	}
	t.Setenv(asPalaverEnv, "1") // inherited by the node processes only
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	args := []string{"--processes", "--server-bin", os.Args[0], "--nodes", "3", "--chaos", "--rounds", "1",
		"--duration", "20s", "--seed", "5", "--dir", t.TempDir()}
	code := runTestCluster(ctx, args, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit code = %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	t.Logf("\n%s", stdout.String())
	for _, want := range []string{"as processes of", "nemesis", "kill node-", "restart node-"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, stderr.String())
		}
	}
	for _, want := range []string{"kill 1", "state hashes equal", "PASS"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("verdict table lacks %q:\n%s", want, stdout.String())
		}
	}
}
