package raft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestRestartReplaysLogWithoutSecondBootstrap(t *testing.T) {
	dir := t.TempDir()
	logs := newRecordingHandler(slog.LevelInfo)
	cfg := fastConfig("node-a", dir)
	cfg.Logger = slog.New(logs)

	first := &listMachine{}
	s := openLeader(t, cfg, first)
	want := []string{"a", "b", "c"}
	for i, item := range want {
		resp, _ := mustPropose(t, s, item)
		if resp != i+1 {
			t.Fatalf("Propose(%q) response = %v, want %d", item, resp, i+1)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := len(logs.find("bootstrapped")); got != 1 {
		t.Fatalf("first start logged %d bootstraps, want 1", got)
	}

	second := &listMachine{}
	s = openLeader(t, cfg, second)
	if got := second.items(); !slices.Equal(got, want) {
		t.Fatalf("after restart items = %q, want %q", got, want)
	}
	if applies, restores := second.counts(); applies != len(want) || restores != 0 {
		t.Fatalf("after restart applies=%d restores=%d, want %d and 0 (log replay only)", applies, restores, len(want))
	}
	if got := len(logs.find("bootstrapped")); got != 1 {
		t.Fatalf("restart bootstrapped again (%d bootstraps logged)", got)
	}
	status := s.Status()
	if status.Role != "leader" || status.Voters != 1 || status.LeaderID != "node-a" || status.Term < 2 {
		t.Fatalf("status after restart = %+v, want leader node-a, 1 voter, term >= 2", status)
	}
}

func TestRestartRestoresSnapshotThenReplaysLog(t *testing.T) {
	dir := t.TempDir()
	cfg := fastConfig("node-a", dir)

	s := openLeader(t, cfg, &listMachine{})
	var want []string
	for i := range 5 {
		item := fmt.Sprintf("before-%d", i)
		mustPropose(t, s, item)
		want = append(want, item)
	}
	if err := s.Snapshot(); err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	snapshotIndex := s.AppliedIndex()
	for i := range 3 {
		item := fmt.Sprintf("after-%d", i)
		mustPropose(t, s, item)
		want = append(want, item)
	}
	lastIndex := s.AppliedIndex()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if entries, err := os.ReadDir(filepath.Join(dir, "snapshots")); err != nil || len(entries) == 0 {
		t.Fatalf("snapshots dir: %v entries, err %v", len(entries), err)
	}

	restarted := &listMachine{}
	s, err := Open(testContext(t), cfg, restarted)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if got := s.AppliedIndex(); got != snapshotIndex {
		t.Fatalf("applied index after snapshot restore = %d, want the snapshot's %d", got, snapshotIndex)
	}
	if err := s.WaitForLeader(testContext(t)); err != nil {
		t.Fatalf("WaitForLeader: %v", err)
	}
	if err := s.WaitApplied(testContext(t), lastIndex); err != nil {
		t.Fatalf("WaitApplied(%d): %v", lastIndex, err)
	}
	if got := restarted.items(); !slices.Equal(got, want) {
		t.Fatalf("restored items = %q, want %q", got, want)
	}
	if applies, restores := restarted.counts(); applies != 3 || restores != 1 {
		t.Fatalf("applies=%d restores=%d, want 3 replayed entries on top of 1 restore", applies, restores)
	}
	if err := restarted.orderError(); err != nil {
		t.Fatal(err)
	}
	// The configuration came from the snapshot, not from a replayed entry.
	if got := s.Status().Voters; got != 1 {
		t.Fatalf("Voters after snapshot restore = %d, want 1", got)
	}
}

func TestInMemoryStore(t *testing.T) {
	sm := &listMachine{}
	s := openLeader(t, memoryConfig("mem-1"), sm)
	var lastIndex uint64
	for _, item := range []string{"x", "y"} {
		_, index := mustPropose(t, s, item)
		if index <= lastIndex {
			t.Fatalf("index %d not after %d", index, lastIndex)
		}
		lastIndex = index
	}
	if err := s.WaitApplied(testContext(t), lastIndex); err != nil {
		t.Fatalf("WaitApplied: %v", err)
	}
	if err := s.Snapshot(); err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	status := s.Status()
	want := Status{NodeID: "mem-1", Role: "leader", LeaderID: "mem-1", LeaderAddr: "mem-1",
		AppliedIndex: lastIndex, Voters: 1}
	if status.NodeID != want.NodeID || status.Role != want.Role || status.LeaderID != want.LeaderID ||
		status.LeaderAddr != want.LeaderAddr || status.AppliedIndex != want.AppliedIndex ||
		status.Voters != want.Voters || status.CommitIndex < lastIndex || status.LastLogIndex < lastIndex {
		t.Fatalf("Status = %+v, want %+v with commit and last index >= %d", status, want, lastIndex)
	}
	if got := sm.items(); !slices.Equal(got, []string{"x", "y"}) {
		t.Fatalf("items = %q", got)
	}
}

func TestOpenRefusesDataDirOfAnotherNode(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir string)
	}{
		{"different node id", func(t *testing.T, dir string) {}},
		{"raft state without node-id file", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, nodeIDFileName)); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openLeader(t, fastConfig("node-a", dir), &listMachine{})
			mustPropose(t, s, "a")
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			tt.prepare(t, dir)
			other, err := Open(testContext(t), fastConfig("node-b", dir), &listMachine{})
			if err == nil {
				other.Close()
				t.Fatal("Open with another node id succeeded")
			}
			if !errors.Is(err, ErrNodeIDMismatch) {
				t.Fatalf("Open error = %v, want ErrNodeIDMismatch", err)
			}
		})
	}
}

func TestOpenSameNodeIDAgain(t *testing.T) {
	dir := t.TempDir()
	s := openLeader(t, fastConfig("node-a", dir), &listMachine{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openLeader(t, fastConfig("node-a", dir), &listMachine{})
	if got := s.Status().NodeID; got != "node-a" {
		t.Fatalf("NodeID = %q", got)
	}
}

func TestOpenConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no node id", Config{Dir: "x", BindAddr: "127.0.0.1:0"}},
		{"no dir on disk", Config{NodeID: "n", BindAddr: "127.0.0.1:0"}},
		{"no bind address on disk", Config{NodeID: "n", Dir: "x"}},
		{"timeouts raft rejects", Config{NodeID: "n", InMemory: true, Timing: Timing{
			HeartbeatTimeout: time.Second, ElectionTimeout: time.Second, LeaderLeaseTimeout: 2 * time.Second, CommitTimeout: time.Millisecond}}},
		{"no timing", Config{NodeID: "n", InMemory: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Logger = slog.New(slog.DiscardHandler)
			s, err := Open(context.Background(), tt.cfg, &listMachine{})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
		})
	}
}

func TestConcurrentProposals(t *testing.T) {
	for _, inMemory := range []bool{true, false} {
		t.Run(fmt.Sprintf("in_memory=%v", inMemory), func(t *testing.T) {
			cfg := fastConfig("node-a", t.TempDir())
			if inMemory {
				cfg = memoryConfig("node-a")
			}
			sm := &listMachine{}
			s := openLeader(t, cfg, sm)
			start := s.AppliedIndex()

			const writers, perWriter = 8, 40
			indexes := make([][]uint64, writers)
			errs := make(chan error, writers)
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for i := range perWriter {
						_, index, err := s.Propose(testContext(t), fmt.Appendf(nil, "w%d-%d", w, i))
						if err != nil {
							errs <- err
							return
						}
						indexes[w] = append(indexes[w], index)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("Propose: %v", err)
			}

			seen := map[uint64]bool{}
			for w, got := range indexes {
				if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
					t.Fatalf("writer %d indexes not strictly increasing: %v", w, got)
				}
				for _, index := range got {
					if index <= start || seen[index] {
						t.Fatalf("index %d reused or not after start %d", index, start)
					}
					seen[index] = true
				}
			}
			items := sm.items()
			if len(items) != writers*perWriter {
				t.Fatalf("applied %d entries, want %d", len(items), writers*perWriter)
			}
			applied := map[string]int{}
			for _, item := range items {
				applied[item]++
			}
			for w := range writers {
				for i := range perWriter {
					if n := applied[fmt.Sprintf("w%d-%d", w, i)]; n != 1 {
						t.Fatalf("w%d-%d applied %d times", w, i, n)
					}
				}
			}
			if err := sm.orderError(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestFollowerRejectsProposals(t *testing.T) {
	cfg := memoryConfig("lonely")
	cfg.Bootstrap = false // no configuration: never elects itself
	s, err := Open(testContext(t), cfg, &listMachine{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })

	_, _, err = s.Propose(testContext(t), []byte("x"))
	var notLeader *NotLeaderError
	if !errors.Is(err, ErrNotLeader) || !errors.As(err, &notLeader) {
		t.Fatalf("Propose on follower = %v, want ErrNotLeader", err)
	}
	if err := s.Barrier(testContext(t)); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("Barrier on follower = %v, want ErrNotLeader", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := s.WaitForLeader(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitForLeader without cluster = %v, want deadline exceeded", err)
	}
	if got := s.Status(); got.Role != "follower" || got.LeaderID != "" || got.Voters != 0 {
		t.Fatalf("Status = %+v, want follower without leader or voters", got)
	}
}

func TestCloseReleasesWaiters(t *testing.T) {
	s := openLeader(t, memoryConfig("node-a"), &listMachine{})
	waitErr := make(chan error, 1)
	go func() { waitErr <- s.WaitApplied(context.Background(), s.AppliedIndex()+100) }()
	leaderErr := make(chan error, 1)

	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	go func() { leaderErr <- s.WaitForLeader(context.Background()) }()
	for name, ch := range map[string]chan error{"WaitApplied": waitErr, "WaitForLeader": leaderErr} {
		select {
		case err := <-ch:
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("%s after Close = %v, want ErrClosed", name, err)
			}
		case <-time.After(testTimeout):
			t.Fatalf("%s still waiting after Close", name)
		}
	}
	if _, _, err := s.Propose(context.Background(), []byte("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Propose after Close = %v, want ErrClosed", err)
	}
	if err := s.Snapshot(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Snapshot after Close = %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if got := s.Status().Role; got != "shutdown" {
		t.Fatalf("Role after Close = %q", got)
	}
}

func TestProposeHonoursContext(t *testing.T) {
	s := openLeader(t, memoryConfig("node-a"), &listMachine{})
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := s.Propose(cancelled, []byte("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Propose with cancelled ctx = %v", err)
	}
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if _, _, err := s.Propose(expired, []byte("x")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Propose with expired ctx = %v", err)
	}
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.WaitApplied(short, s.AppliedIndex()+1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitApplied past the end = %v", err)
	}
}

func TestOnApplyObservesEachProposal(t *testing.T) {
	var observed atomic.Int64
	cfg := memoryConfig("node-a")
	cfg.OnApply = func(d time.Duration) {
		if d > 0 {
			observed.Add(1)
		}
	}
	s := openLeader(t, cfg, &listMachine{})
	for i := range 3 {
		mustPropose(t, s, fmt.Sprint(i))
	}
	if got := observed.Load(); got != 3 {
		t.Fatalf("OnApply called %d times, want 3", got)
	}
}

// clusteredConfig is fastConfig gossiping over TCP with its identity.
func clusteredConfig(t testing.TB, nodeID string) Config {
	cfg := fastConfig(nodeID, t.TempDir())
	cfg.GossipAddr, cfg.ClusterAddr, cfg.Identity = "127.0.0.1:0", "127.0.0.1:0", testIdentity(t, nodeID)
	return cfg
}

func TestBindAddressInUse(t *testing.T) {
	first := openLeader(t, clusteredConfig(t, "node-a"), &listMachine{})
	cfg := clusteredConfig(t, "node-b")
	cfg.BindAddr = first.Addr()
	s, err := Open(testContext(t), cfg, &listMachine{})
	if err == nil {
		s.Close()
		t.Fatalf("second store bound %s too", cfg.BindAddr)
	}
}

// TestUnclusteredStoreListensNowhere: a node that is not clustered has no peers, so its raft
// transport opens no port anyone could send raft messages to.
func TestUnclusteredStoreListensNowhere(t *testing.T) {
	cfg := fastConfig("alone", t.TempDir())
	cfg.BindAddr = freeLoopbackAddr(t)
	s := openLeader(t, cfg, &listMachine{})
	mustPropose(t, s, "x")
	if s.Addr() != cfg.BindAddr {
		t.Fatalf("Addr = %q, want the configured name %q", s.Addr(), cfg.BindAddr)
	}
	if conn, err := net.DialTimeout("tcp", cfg.BindAddr, time.Second); err == nil {
		conn.Close()
		t.Fatalf("an unclustered store accepts connections at %s", cfg.BindAddr)
	}
}
