package eventstore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// holdSyncs replaces the store's fsync with one that reports each call on entered and returns
// only once release is closed (then with err).
func holdSyncs(t *testing.T, s *Store, err error) (entered <-chan struct{}, release func()) {
	t.Helper()
	if s.wal == nil {
		t.Fatal("store opened without fsync")
	}
	in := make(chan struct{}, 64)
	gate := make(chan struct{})
	s.wal.mu.Lock()
	real := s.wal.fsync
	s.wal.fsync = func(f *os.File) error {
		in <- struct{}{}
		<-gate
		if err != nil {
			return err
		}
		return real(f)
	}
	s.wal.mu.Unlock()
	var once sync.Once
	return in, func() { once.Do(func() { close(gate) }) }
}

// waitFor fails the test when ch stays silent for 10 s.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// TestAppendAnswersAfterFsync: an Append returns only after the fsync that covers its commit; the
// writer meanwhile commits the next batch (pipelining), and the exchange's reads, which must never
// hand out a row a crash could take back, wait for that fsync too.
func TestAppendAnswersAfterFsync(t *testing.T) {
	s, _ := openTestStore(t, false)
	ctx := context.Background()
	entered, release := holdSyncs(t, s, nil)
	defer release()

	first := make(chan error, 1)
	go func() { first <- s.Append(ctx, newMsg("m1", "#c", at(0), "one")) }()
	waitFor(t, entered, "the fsync of m1's batch")
	second := make(chan error, 1)
	go func() { second <- s.Append(ctx, newMsg("m2", "#c", at(time.Second), "two")) }()
	// The writer commits m2's batch while m1's fsync is held: m2 becomes visible before either
	// call has returned.
	deadline := time.Now().Add(10 * time.Second)
	for ok := false; !ok; {
		var err error
		if ok, err = s.Has(ctx, "m2"); err != nil {
			t.Fatal(err)
		}
		if !ok && time.Now().After(deadline) {
			t.Fatal("the writer did not commit m2 while m1's fsync was held")
		}
		if !ok {
			<-time.After(time.Millisecond) // poll interval, not synchronization
		}
	}
	exchanged := make(chan []Message, 1)
	go func() {
		rows, err := s.OriginAfter(ctx, "node-a", 0, 10)
		if err != nil {
			t.Error(err)
		}
		exchanged <- rows
	}()
	select {
	case err := <-first:
		t.Fatalf("Append returned (%v) before its fsync", err)
	case err := <-second:
		t.Fatalf("Append returned (%v) before any fsync covered it", err)
	case rows := <-exchanged:
		t.Fatalf("OriginAfter handed out %d rows before they were durable", len(rows))
	default:
	}
	release()
	if err := waitFor(t, first, "m1's Append"); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(t, second, "m2's Append"); err != nil {
		t.Fatal(err)
	}
	if rows := waitFor(t, exchanged, "OriginAfter"); len(rows) != 2 {
		t.Fatalf("OriginAfter = %v, want m1 and m2", ids(rows))
	}
	if s.wal.synced.Load() < s.wal.started.Load() {
		t.Fatalf("synced %d < started %d after every call returned", s.wal.synced.Load(), s.wal.started.Load())
	}
}

// TestFsyncFailureIsSticky: a failed fsync fails the calls it covered and every later write,
// since what reached the disk is unknown after it.
func TestFsyncFailureIsSticky(t *testing.T) {
	s, _ := openTestStore(t, false)
	ctx := context.Background()
	diskErr := errors.New("disk on fire")
	_, release := holdSyncs(t, s, diskErr)
	release()
	if err := s.Append(ctx, newMsg("m1", "#c", at(0), "one")); !errors.Is(err, diskErr) {
		t.Fatalf("Append with a failing fsync = %v, want %v", err, diskErr)
	}
	if err := s.Append(ctx, newMsg("m2", "#c", at(0), "two")); !errors.Is(err, diskErr) {
		t.Fatalf("Append after a failed fsync = %v, want %v", err, diskErr)
	}
	if err := s.SetCursor(ctx, "node-b", 3); !errors.Is(err, diskErr) {
		t.Fatalf("SetCursor after a failed fsync = %v, want %v", err, diskErr)
	}
}

// TestDirectWritesAreSynced: reactions and cursors, written outside the group commit, are fsynced
// before their calls return.
func TestDirectWritesAreSynced(t *testing.T) {
	s, _ := openTestStore(t, false)
	ctx := context.Background()
	mustAppend(t, s, newMsg("r", "#c", at(0), "root"))
	calls := map[string]func() error{
		"React":     func() error { return s.React(ctx, "r", "did:plc:bob", "bob", "👍", at(time.Second)) },
		"Unreact":   func() error { return s.Unreact(ctx, "r", "did:plc:bob", "👍") },
		"SetCursor": func() error { return s.SetCursor(ctx, "node-b", 7) },
		"FileReaction": func() error {
			_, err := s.FileReaction(ctx, ReactionEvent{EventID: "ev1", Origin: "node-a", Root: "r", Reactor: "did:plc:bob",
				ReactorNick: "bob", Emoji: "🎉", At: at(2 * time.Second), Venue: "#c"})
			return err
		},
	}
	for name, call := range calls {
		if err := call(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !s.wal.durableNow() {
			t.Fatalf("%s returned before its commit was synced", name)
		}
	}
}

// crashChildEnv makes the test binary a writer that TestKillNineKeepsAcknowledgedAppends kills.
const crashChildEnv = "EVENTSTORE_CRASH_CHILD_DB"

// TestKillNineKeepsAcknowledgedAppends runs a writer process that prints each msgid once its
// Append has returned, kills it with SIGKILL in full flight, and checks that the reopened store
// holds (and finds by search) every msgid it printed. A killed process leaves the page cache
// behind, so this checks the WAL recovery path; TestAppendAnswersAfterFsync checks that no call
// returns before its fsync.
func TestKillNineKeepsAcknowledgedAppends(t *testing.T) {
	if path := os.Getenv(crashChildEnv); path != "" {
		runCrashChild(path)
		return
	}
	if testing.Short() {
		t.Skip("spawns a process")
	}
	path := filepath.Join(t.TempDir(), "events.db")
	cmd := exec.Command(os.Args[0], "-test.run", "^TestKillNineKeepsAcknowledgedAppends$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	var acked []string
	for len(acked) < 500 && lines.Scan() {
		acked = append(acked, lines.Text())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() { // acknowledged before the kill, still in the pipe
		acked = append(acked, lines.Text())
	}
	cmd.Wait() //nolint:errcheck // killed on purpose
	if len(acked) < 500 {
		t.Fatalf("the writer acknowledged only %d appends before it stopped", len(acked))
	}

	s, err := Open(context.Background(), Options{Path: path, Logger: quietLogger})
	if err != nil {
		t.Fatalf("reopen after SIGKILL: %v", err)
	}
	defer s.Close()
	for _, id := range acked {
		ok, err := s.Has(context.Background(), id)
		if err != nil || !ok {
			t.Fatalf("acknowledged %s lost after SIGKILL (%v)", id, err)
		}
	}
	last := acked[len(acked)-1]
	hits, err := s.Search(context.Background(), "#crash", "word"+last, 0, 5)
	if err != nil || len(hits) != 1 || hits[0].MsgID != last {
		t.Fatalf("search for the last acknowledged message = %v, %v", ids(hits), err)
	}
}

// runCrashChild appends from 8 goroutines until killed, printing each acknowledged msgid.
func runCrashChild(path string) {
	s, err := Open(context.Background(), Options{Path: path, Logger: quietLogger})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("g%d-%06d", g, i)
				if err := s.Append(context.Background(), newMsg(id, "#crash", at(time.Duration(i)*time.Millisecond), "word"+id)); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				mu.Lock()
				fmt.Println(id)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}
