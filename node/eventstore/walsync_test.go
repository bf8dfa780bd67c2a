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

// TestExchangeReadsWaitForTheDatabaseFsync: an Append is durable once the intake log is fsynced,
// so it returns while the database's own fsync is held; the exchange's reads, which hand out log
// positions to other nodes, still wait until the rows they read are durable in the database too.
func TestExchangeReadsWaitForTheDatabaseFsync(t *testing.T) {
	s, _ := openTestStore(t, false)
	ctx := context.Background()
	entered, release := holdSyncs(t, s, nil)
	defer release()

	mustAppend(t, s, newMsg("m1", "#c", at(0), "one"))
	waitFor(t, entered, "the database fsync of m1's transaction")
	mustAppend(t, s, newMsg("m2", "#c", at(time.Second), "two"))
	if ok, err := s.Has(ctx, "m2"); err != nil || !ok {
		t.Fatalf("Has(m2) = %v, %v while the database fsync is held; want true", ok, err)
	}
	exchanged := make(chan []Message, 1)
	go func() {
		rows, err := s.OriginAfter(ctx, "node-a", 0, 10)
		if err != nil {
			t.Error(err)
		}
		exchanged <- rows
	}()
	ctxShort, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	select {
	case rows := <-exchanged:
		t.Fatalf("OriginAfter handed out %d rows before they were durable in the database", len(rows))
	case <-ctxShort.Done():
	}
	release()
	if rows := waitFor(t, exchanged, "OriginAfter"); len(rows) != 2 {
		t.Fatalf("OriginAfter = %v, want m1 and m2", ids(rows))
	}
}

// TestFsyncFailureIsSticky: after a failed fsync of the database, what reached its disk is unknown:
// every later delete and direct write fails. Appends go on (the intake log holds them durably), and
// the intake log keeps every segment, so that the next start applies them again.
func TestFsyncFailureIsSticky(t *testing.T) {
	s, path := openTestStore(t, false)
	ctx := context.Background()
	mustAppend(t, s, newMsg("root", "#c", at(0), "root"))
	diskErr := errors.New("disk on fire")
	_, release := holdSyncs(t, s, diskErr)
	release()
	if err := s.Delete(ctx, "root", at(time.Second)); !errors.Is(err, diskErr) {
		t.Fatalf("Delete with a failing fsync = %v, want %v", err, diskErr)
	}
	if err := s.SetCursor(ctx, "node-b", 3); !errors.Is(err, diskErr) {
		t.Fatalf("SetCursor after a failed fsync = %v, want %v", err, diskErr)
	}
	if err := s.Append(ctx, newMsg("m1", "#c", at(2*time.Second), "one")); err != nil {
		t.Fatalf("Append after a failed database fsync = %v, want nil (the intake log holds it)", err)
	}
	if err := s.Close(); err != nil && !errors.Is(err, diskErr) {
		t.Fatal(err)
	}
	if n := segmentCount(t, path); n == 0 {
		t.Fatal("intake log after Close has no segment; want it kept")
	}
}

// TestDirectWritesAreSynced: reactions and cursors, written outside the writer's batches, are fsynced
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
// behind, so this checks the recovery paths (the intake log's records applied at Open, the WAL's
// frames); TestIntakeAnswersAfterFsync checks that no call returns before its sync.
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
