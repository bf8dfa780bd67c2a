package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The previous release: the tag, and its commit for a clone that lacks the tag.
const (
	previousTag    = "v0.1.0"
	previousCommit = "27b9d77e6acb069b67433171feff4387344e6d5d"
)

// rollingUpgradeEnv turns TestRollingUpgrade on (`make upgrade-check`): building the previous
// version from source takes minutes on a cold build cache.
const rollingUpgradeEnv = "PALAVER_ROLLING_UPGRADE"

// TestRollingUpgrade builds the previous release from the git history, runs a 3-node cluster of
// it as processes, and replaces the nodes one at a time with this build (this test binary acting
// as palaver) while the checked workload runs: no acknowledged change or message may be lost, the
// histories must stay linearizable and the upgraded nodes must end with equal state hashes. Each
// upgraded node must have loaded the Raft snapshot, log and message store the previous version
// wrote, and a change only the new version can apply (a user's MODE +i) must be refused until the
// last node is upgraded, then accepted: the previous version is built with its snapshot threshold lowered (128 entries, checked
// every second) so that its nodes write snapshots during a short run.
func TestRollingUpgrade(t *testing.T) {
	if os.Getenv(rollingUpgradeEnv) != "1" {
		t.Skipf("builds the previous release from git (minutes): set %s=1 or run make upgrade-check", rollingUpgradeEnv)
	}
	old := buildPrevious(t)
	t.Setenv(asPalaverEnv, "1") // this binary serves as the new version
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"--upgrade-from", old, "--server-bin", os.Args[0], "--nodes", "3",
		"--duration", "90s", "--seed", "11", "--dir", dir}
	code := runTestCluster(ctx, args, &stdout, &stderr)
	t.Logf("\n%s\n%s", stderr.String(), stdout.String())
	if code != 0 {
		t.Fatalf("exit code = %d", code)
	}
	for _, want := range []string{"upgrade 3", "acknowledged state changes lost          0", "acknowledged messages lost / duplicated  0 / 0", "state hashes equal                       yes", "PASS"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("verdict table lacks %q", want)
		}
	}
	restarts := 0
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, ": restart node-") {
			restarts++
			if !strings.Contains(line, "snapshot at") {
				t.Errorf("upgraded on a data directory without a snapshot of the previous version: %s", line)
			}
		}
	}
	if restarts != 3 {
		t.Errorf("%d nodes restarted as the new version, want 3", restarts)
	}
	// After each upgrade a user's MODE +i (a command the previous version cannot apply) is
	// refused while a node of the previous version remains, and accepted after the last one.
	gates := linesWith(stderr.String(), ": feature-gate node-")
	if len(gates) != 3 {
		t.Errorf("%d feature-gate probes, want 3: %q", len(gates), gates)
	} else {
		for k, line := range gates {
			accepted := strings.Contains(line, " MODE gate") && !strings.Contains(line, "FAIL MODE")
			if accepted != (k == 2) {
				t.Errorf("probe %d after %d upgrades: %s", k+1, k+1, line)
			}
		}
	}
	// After each upgrade an upload on the upgraded node is taken, also while nodes of the
	// previous version remain (its record then takes the previous version's shape).
	uploads := linesWith(stderr.String(), ": upload node-")
	if len(uploads) != 3 {
		t.Errorf("%d upload probes, want 3: %q", len(uploads), uploads)
	}
	for k, line := range uploads {
		if !strings.Contains(line, "/api/v1/upload → 200 ") {
			t.Errorf("upload probe %d after %d upgrades: %s", k+1, k+1, line)
		}
	}
	// The new version logs hashicorp/raft's restore of the previous one's snapshot at its start.
	for i := range 3 {
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("node-%d.testcluster.log", i)))
		if err != nil {
			t.Fatal(err)
		}
		_, after, ok := strings.Cut(string(data), "=== testcluster: "+os.Args[0]+" serve")
		if !ok || !strings.Contains(after, `msg="restored from snapshot"`) {
			t.Errorf("node-%d: the new version did not restore a snapshot (started: %v)", i, ok)
		}
	}
}

// linesWith returns the lines of text that contain substr.
func linesWith(text, substr string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return out
}

// buildPrevious builds the previous release from `git archive` of its commit into a temporary
// directory and returns the binary. It skips the test when git or the commit is not at hand.
func buildPrevious(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("rolling upgrade: git is not installed, so the previous release cannot be built")
	}
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", args...).Output()
		return strings.TrimSpace(string(out)), err
	}
	top, err := git("rev-parse", "--show-toplevel")
	if err != nil {
		t.Skip("rolling upgrade: not in a git checkout, so the previous release cannot be built")
	}
	var commit string
	for _, ref := range []string{previousTag, previousCommit} {
		if c, err := git("rev-parse", "--verify", "--quiet", ref+"^{commit}"); err == nil {
			commit = c
			break
		}
	}
	if commit == "" {
		t.Skipf("rolling upgrade: neither the tag %s nor the commit %s is in the git history (a shallow clone? git fetch --unshallow --tags)", previousTag, previousCommit[:7])
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	archive := filepath.Join(dir, "previous.tar")
	if out, err := exec.Command("git", "-C", top, "archive", "--format=tar", "-o", archive, commit).CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", commit, err, out)
	}
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "-xf", archive, "-C", src).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	// Snapshots every 128 entries, looked for every second, instead of 8192 and 2 minutes.
	config := filepath.Join(src, "raft", "config.go")
	data, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	patched := string(data)
	for from, to := range map[string]string{
		"defaultSnapshotThreshold = 8192":            "defaultSnapshotThreshold = 128",
		"defaultSnapshotInterval  = 2 * time.Minute": "defaultSnapshotInterval  = time.Second",
	} {
		if !strings.Contains(patched, from) {
			t.Fatalf("%s of %s lacks %q", config, commit[:7], from)
		}
		patched = strings.Replace(patched, from, to, 1)
	}
	if err := os.WriteFile(config, []byte(patched), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "palaver-"+previousTag)
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/palaver")
	build.Dir = src
	build.Env = append(os.Environ(), "GOFLAGS=-mod=readonly -buildvcs=false", "GOWORK=off")
	began := time.Now()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %s (%s): %v\n%s", previousTag, commit[:7], err, out)
	}
	t.Logf("built %s (%s) in %s", previousTag, commit[:7], time.Since(began).Round(time.Second))
	return bin
}
