package eventstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(ctx, Options{Path: path, Logger: quietLogger}) // fsync on: the real configuration
	if err != nil {
		t.Fatal(err)
	}
	root := newMsg("r", "#c", at(0), "original words")
	mustAppend(t, s, root, newMsg("gone", "#c", at(time.Second), "deleted words"), newMsg("x", "#c", at(2*time.Second), "plain words"))
	mustAppend(t, s, newEdit("e1", "r", root, at(3*time.Second), "edited words"))
	mustAppend(t, s, newEdit("orphan", "later", root, at(4*time.Second), "early edit"))
	if err := s.Delete(ctx, "gone", at(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	lastSeq := root.Seq
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(ctx, Options{Path: path, Logger: quietLogger})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	if n, err := s.Count(ctx); err != nil || n != 5 {
		t.Fatalf("Count after reopen = %d, %v; want 5", n, err)
	}
	page, err := s.Before(ctx, "#c", Bound{}, 10)
	wantIDs(t, page, err, []string{"r", "x"}, nil)
	if page[0].Text != "edited words" || page[0].Revision != "e1" {
		t.Fatalf("edited root after reopen = %+v", page[0])
	}
	hits, err := s.Search(ctx, "#c", "words", 0, 10)
	wantIDs(t, hits, err, []string{"x", "r"}, nil)
	if gone, err := s.Get(ctx, "gone"); err != nil || gone.DeletedAt.IsZero() {
		t.Fatalf("deleted row after reopen = %+v, %v", gone, err)
	}
	if err := s.Append(ctx, newMsg("r", "#c", at(0), "again")); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("re-append after reopen: %v", err)
	}
	later := newMsg("later", "#c", at(6*time.Second), "late root")
	mustAppend(t, s, later)
	if later.Seq <= lastSeq {
		t.Fatalf("seq after reopen %d not above %d", later.Seq, lastSeq)
	}
	if cur, err := s.Current(ctx, "later"); err != nil || cur.Text != "early edit" || cur.Revision != "orphan" {
		t.Fatalf("root whose edit arrived before a restart = %+v, %v", cur, err)
	}
}

func TestSchemaVersionIsRecorded(t *testing.T) {
	s, path := openTestStore(t, true)
	var version int
	if err := s.readDB.QueryRowContext(context.Background(), `SELECT MAX(version) FROM schema_migrations`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version != len(migrations) {
		t.Fatalf("schema version %d, want %d", version, len(migrations))
	}
	if _, err := s.writeDB.ExecContext(context.Background(), `INSERT INTO schema_migrations VALUES (?, 0)`, len(migrations)+1); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s2, err := Open(context.Background(), Options{Path: path, Logger: quietLogger}); err == nil {
		s2.Close()
		t.Fatal("opened a database with a newer schema")
	}
}

func TestClosed(t *testing.T) {
	s, _ := openTestStore(t, true)
	ctx := context.Background()
	mustAppend(t, s, newMsg("a", "#c", t0, "x"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	calls := map[string]func() error{
		"Append": func() error { return s.Append(ctx, newMsg("b", "#c", t0, "x")) },
		"Delete": func() error { return s.Delete(ctx, "a", t0) },
		"Has":    func() error { _, err := s.Has(ctx, "a"); return err },
		"Get":    func() error { _, err := s.Get(ctx, "a"); return err },
		"Root":   func() error { _, err := s.Root(ctx, "a"); return err },
		"Before": func() error { _, err := s.Before(ctx, "#c", Bound{}, 5); return err },
		"After":  func() error { _, err := s.After(ctx, "#c", Bound{MsgID: "a"}, 5); return err },
		"Export": func() error { _, err := s.ExportAfter(ctx, "#c", 0, 5); return err },
		"Count":  func() error { _, err := s.Count(ctx); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

// TestCloseRacingAppends: Appends racing with Close either commit (and survive a reopen) or
// answer ErrClosed (and stored nothing).
func TestCloseRacingAppends(t *testing.T) {
	s, path := openTestStore(t, true)
	ctx := context.Background()
	const writers = 16
	var wg sync.WaitGroup
	start := make(chan struct{})
	results := make([]error, writers)
	for i := range writers {
		wg.Go(func() {
			<-start
			results[i] = s.Append(ctx, newMsg(fmt.Sprint("w", i), "#c", t0, "x"))
		})
	}
	close(start)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	s2, err := Open(ctx, Options{Path: path, NoSync: true, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	for i, err := range results {
		if err != nil && !errors.Is(err, ErrClosed) {
			t.Fatalf("w%d: %v", i, err)
		}
		ok, herr := s2.Has(ctx, fmt.Sprint("w", i))
		if (err == nil) != ok || herr != nil {
			t.Errorf("w%d: Append returned %v but stored = %v (%v)", i, err, ok, herr)
		}
	}
}

func TestCanceledContext(t *testing.T) {
	s, _ := openTestStore(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Append(ctx, newMsg("a", "#c", t0, "x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append with a canceled context: %v", err)
	}
	if _, err := s.Before(ctx, "#c", Bound{}, 5); !errors.Is(err, context.Canceled) {
		t.Fatalf("Before with a canceled context: %v", err)
	}
}

// TestConcurrentAppend: many goroutines append at once (fsync on, so calls really are batched);
// every message is stored exactly once, and of two callers racing with the same msgid exactly one
// wins.
func TestConcurrentAppend(t *testing.T) {
	s, _ := openTestStore(t, false)
	ctx := context.Background()
	const goroutines, perGoroutine = 24, 25
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*perGoroutine)
	dupWins := make(chan bool, goroutines*perGoroutine)
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				id := fmt.Sprintf("g%02d-%03d", g, i)
				// Half of the calls store two messages, so batches mix call sizes.
				msgs := []*Message{newMsg(id, "#c", at(time.Duration(i)*time.Millisecond), "x")}
				if i%2 == 0 {
					msgs = append(msgs, newMsg(id+"b", "#c", at(time.Duration(i)*time.Millisecond), "y"))
				}
				if err := s.Append(ctx, msgs...); err != nil {
					errs <- err
				}
				// Every goroutine also races the others for a shared msgid.
				err := s.Append(ctx, newMsg(fmt.Sprintf("shared-%03d", i), "#c", at(time.Hour), "z"))
				switch {
				case err == nil:
					dupWins <- true
				case !errors.Is(err, ErrDuplicate):
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	close(dupWins)
	for err := range errs {
		t.Fatal(err)
	}
	if wins := len(dupWins); wins != perGoroutine {
		t.Fatalf("%d callers won the shared msgids, want %d", wins, perGoroutine)
	}
	want := goroutines*perGoroutine + goroutines*((perGoroutine+1)/2) + perGoroutine
	if n, _ := s.Count(ctx); n != int64(want) {
		t.Fatalf("Count = %d, want %d", n, want)
	}
	got := exportAll(t, s, "#c", 100)
	if len(got) != want {
		t.Fatalf("export walk saw %d messages, want %d", len(got), want)
	}
	slices.Sort(got)
	if dup := slices.Compact(slices.Clone(got)); len(dup) != len(got) {
		t.Fatal("a message was stored twice")
	}
}

// TestOrphanEditCount: the writer's count of edits waiting for their root follows arrivals,
// links and restarts, since storing a root skips the search for early revisions when it is zero.
func TestOrphanEditCount(t *testing.T) {
	ctx := context.Background()
	s, path := openTestStore(t, true)
	root := newMsg("r", "#c", t0, "root")
	mustAppend(t, s, newEdit("e1", "r", root, at(time.Second), "one"), newEdit("e2", "e1", root, at(2*time.Second), "two"))
	if _, err := s.Count(ctx); err != nil { // a read: it waits for the writer to apply the edits
		t.Fatal(err)
	}
	if s.orphanEdits != 2 {
		t.Fatalf("orphans = %d, want 2", s.orphanEdits)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, Options{Path: path, NoSync: true, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.orphanEdits != 2 {
		t.Fatalf("orphans after reopen = %d, want 2", s.orphanEdits)
	}
	mustAppend(t, s, root)
	if _, err := s.Count(ctx); err != nil {
		t.Fatal(err)
	}
	if s.orphanEdits != 0 {
		t.Fatalf("orphans after the root arrived = %d, want 0", s.orphanEdits)
	}
	if cur, err := s.Current(ctx, "r"); err != nil || cur.Text != "two" {
		t.Fatalf("Current = %+v, %v", cur, err)
	}
}

// TestOrderKeyStaysInItsMillisecond: the schema refuses an okey outside its row's millisecond,
// which is what a millisecond holding more than 1<<tieBits roots would produce.
func TestOrderKeyStaysInItsMillisecond(t *testing.T) {
	s, _ := openTestStore(t, true)
	_, err := s.writeDB.ExecContext(context.Background(), `INSERT INTO messages(msgid, venue, command, sender,
		sender_nick, sender_did, text, tags_json, time_ms, origin, okey) VALUES ('x', '#c', 'PRIVMSG', '', '', '', '', '', ?, '', ?)`,
		int64(5), firstKeyOf(6))
	if err == nil {
		t.Fatal("an okey of the next millisecond was accepted")
	}
}
