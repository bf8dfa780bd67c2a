package eventstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// appendEach starts one Append per message, each on its own goroutine, and returns their results
// in order on one channel each.
func appendEach(s *Store, msgs []*Message) []chan error {
	out := make([]chan error, len(msgs))
	for i, m := range msgs {
		out[i] = make(chan error, 1)
		go func() { out[i] <- s.Append(context.Background(), m) }()
	}
	return out
}

func callerMessages(prefix string, n int) []*Message {
	msgs := make([]*Message, n)
	for i := range msgs {
		msgs[i] = newMsg(fmt.Sprintf("%s-%d", prefix, i), fmt.Sprintf("#c%d", i), at(time.Duration(i+10)*time.Second), "text")
	}
	return msgs
}

// holdIntakeSyncs replaces the intake log's fsync with one that reports each call on entered and
// returns only once release is closed (then with err), and counts the calls.
func holdIntakeSyncs(t *testing.T, s *Store, err error) (entered <-chan struct{}, release func(), calls *atomic.Int64) {
	t.Helper()
	if s.intake.noSync {
		t.Fatal("store opened without fsync")
	}
	in := make(chan struct{}, 64)
	gate := make(chan struct{})
	n := new(atomic.Int64)
	// Set while no Append runs: the intake goroutine reads it only in flush.
	s.intake.sync = func(f *os.File) error {
		n.Add(1)
		in <- struct{}{}
		<-gate
		if err != nil {
			return err
		}
		return f.Sync()
	}
	var once sync.Once
	return in, func() { once.Do(func() { close(gate) }) }, n
}

// holdWriter makes the writer stop before it applies its next batch until release is called.
func holdWriter(s *Store) (held <-chan struct{}, release func()) {
	h, gate := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	s.applying = func() {
		if first.CompareAndSwap(false, true) {
			close(h)
			<-gate
		}
	}
	var once sync.Once
	return h, func() { once.Do(func() { close(gate) }) }
}

// TestIntakeGathersConcurrentCallers: callers queued while the intake log writes go into one
// write and one fsync, and each is answered with its own seq.
func TestIntakeGathersConcurrentCallers(t *testing.T) {
	const callers = 12
	s, _ := openTestStore(t, false)
	var msgs [][]*Message
	for _, m := range callerMessages("g", callers) {
		msgs = append(msgs, []*Message{m})
	}
	before := s.wal.completed.Load()
	for i, err := range appendInOneBatch(t, s, msgs) {
		if err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
	}
	seen := map[int64]bool{}
	for _, call := range msgs {
		m := call[0]
		if m.Seq == 0 || seen[m.Seq] {
			t.Fatalf("message %s has seq %d (seen before: %v)", m.MsgID, m.Seq, seen[m.Seq])
		}
		seen[m.Seq] = true
		got, err := s.Get(context.Background(), m.MsgID)
		if err != nil || got.Seq != m.Seq {
			t.Fatalf("Get(%s) = seq %d, %v; want seq %d", m.MsgID, got.Seq, err, m.Seq)
		}
	}
	// The holding append and the gathered calls: at most two transactions.
	if commits := s.wal.completed.Load() - before; commits > 2 {
		t.Fatalf("%d callers took %d commits, want at most 2", callers, commits)
	}
}

// TestIntakeAnswersAfterFsync: no Append returns before the fsync of the intake log that covers it.
func TestIntakeAnswersAfterFsync(t *testing.T) {
	s, _ := openTestStore(t, false)
	entered, release, _ := holdIntakeSyncs(t, s, nil)
	defer release()
	results := appendEach(s, callerMessages("d", 4))
	waitFor(t, entered, "the intake log's fsync")
	for i, done := range results {
		select {
		case err := <-done:
			t.Fatalf("caller %d answered (%v) before the fsync covering it returned", i, err)
		default:
		}
	}
	release()
	for i, done := range results {
		if err := waitFor(t, done, "an Append after its fsync"); err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
	}
}

// TestIntakeFsyncFailureIsSticky: a failed fsync of the intake log fails the calls it covered and
// every later Append, since what reached the disk is unknown after it.
func TestIntakeFsyncFailureIsSticky(t *testing.T) {
	s, _ := openTestStore(t, false)
	diskErr := errors.New("disk on fire")
	_, release, _ := holdIntakeSyncs(t, s, diskErr)
	release()
	if err := s.Append(context.Background(), newMsg("m1", "#c", at(0), "one")); !errors.Is(err, diskErr) {
		t.Fatalf("Append with a failing fsync = %v, want %v", err, diskErr)
	}
	if err := s.Append(context.Background(), newMsg("m2", "#c", at(time.Second), "two")); !errors.Is(err, diskErr) {
		t.Fatalf("Append after a failed fsync = %v, want %v", err, diskErr)
	}
	if ok, err := s.Has(context.Background(), "m1"); err != nil || ok {
		t.Fatalf("Has(m1) = %v, %v after its append failed; want false", ok, err)
	}
}

// TestIntakeNoLossNoDuplicates: callers racing with the same msgids store each msgid once; exactly
// one caller per msgid succeeds and the others are told it is a duplicate, whether the first copy
// is applied, waiting for the writer, or earlier in the same batch.
func TestIntakeNoLossNoDuplicates(t *testing.T) {
	s, _ := openTestStore(t, false)
	_, release := holdWriter(s)
	defer release()
	mustAppend(t, s, newMsg("dup-applied", "#c", at(0), "first")) // held at the writer: pending
	var msgs []*Message
	var calls [][]*Message
	for round := range 3 {
		for _, m := range callerMessages("dup", 6) {
			m.Text = fmt.Sprintf("round %d", round)
			msgs = append(msgs, m)
			calls = append(calls, []*Message{m})
		}
		again := newMsg("dup-applied", "#c", at(0), "again")
		msgs = append(msgs, again)
		calls = append(calls, []*Message{again})
	}
	won := map[string]int{}
	for i, err := range appendInOneBatch(t, s, calls) {
		switch {
		case err == nil:
			won[msgs[i].MsgID]++
		case errors.Is(err, ErrDuplicate):
			if msgs[i].Seq != 0 {
				t.Fatalf("duplicate %s given seq %d", msgs[i].MsgID, msgs[i].Seq)
			}
		default:
			t.Fatalf("append %d: %v", i, err)
		}
	}
	release()
	if won["dup-applied"] != 0 {
		t.Fatalf("a pending msgid was stored again %d times", won["dup-applied"])
	}
	for _, m := range callerMessages("dup", 6) {
		if won[m.MsgID] != 1 {
			t.Fatalf("%s stored by %d callers, want 1", m.MsgID, won[m.MsgID])
		}
	}
	// Once applied, the database answers for them.
	for _, m := range append(callerMessages("dup", 6), newMsg("dup-applied", "#c", at(0), "x")) {
		if err := s.Append(context.Background(), m); !errors.Is(err, ErrDuplicate) {
			t.Fatalf("Append(%s) after it was applied = %v, want ErrDuplicate", m.MsgID, err)
		}
	}
	if n, err := s.Count(context.Background()); err != nil || n != 8 { // with appendInOneBatch's own
		t.Fatalf("Count = %d, %v; want 8", n, err)
	}
}

// TestReadsWaitForTheWriter: an Append returns once the intake log holds it, before the database
// does; a read started after it waits for the writer and sees the message.
func TestReadsWaitForTheWriter(t *testing.T) {
	s, _ := openTestStore(t, false)
	held, release := holdWriter(s)
	defer release()
	m := newMsg("waited", "#c", at(0), "hello")
	if err := s.Append(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	waitFor(t, held, "the writer to take the batch")
	read := make(chan bool, 1)
	go func() {
		ok, err := s.Has(context.Background(), "waited")
		if err != nil {
			t.Error(err)
		}
		read <- ok
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := s.Get(ctx, "waited"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get while the writer is held = %v, want the caller's deadline", err)
	}
	select {
	case ok := <-read:
		t.Fatalf("Has returned %v before the writer applied the message", ok)
	default:
	}
	release()
	if !waitFor(t, read, "Has after the writer applied") {
		t.Fatal("Has = false after the message was applied")
	}
}

// TestIntakeRecovery: messages acknowledged but not applied before a crash are applied when the
// store opens, under the seqs they were given; a torn last frame is ignored; later seqs follow.
func TestIntakeRecovery(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.db")
	s, err := Open(context.Background(), Options{Path: path, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, newMsg("before", "#c", at(0), "applied before the crash"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// What a crash leaves: a segment holding two acknowledged records and half of a third.
	l, err := openIntake(intakeDir(path), 0, 7, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"lost-1", "lost-2"} {
		p := pendingMessage{Message: *newMsg(id, "#c", at(time.Duration(i+1)*time.Second), "word"+id), tagsJSON: `{"+x":"y"}`}
		l.add(&p, int64(7+i))
	}
	if err := l.flush(7); err != nil {
		t.Fatal(err)
	}
	torn := pendingMessage{Message: *newMsg("torn", "#c", at(3*time.Second), "never acknowledged")}
	l.add(&torn, 9)
	if _, err := l.f.Write(l.buf[:len(l.buf)/2]); err != nil {
		t.Fatal(err)
	}
	if err := l.close(false); err != nil {
		t.Fatal(err)
	}

	s, err = Open(context.Background(), Options{Path: path, Logger: quietLogger})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	ctx := context.Background()
	for i, id := range []string{"lost-1", "lost-2"} {
		got, err := s.Get(ctx, id)
		if err != nil || got.Seq != int64(7+i) || got.Tags["+x"] != "y" || got.Text != "word"+id {
			t.Fatalf("Get(%s) = %+v, %v; want seq %d with its text and tags", id, got, err, 7+i)
		}
	}
	if hits, err := s.Search(ctx, "#c", "wordlost-2", 0, 5); err != nil || len(hits) != 1 {
		t.Fatalf("search for a recovered message = %v, %v", ids(hits), err)
	}
	if ok, _ := s.Has(ctx, "torn"); ok {
		t.Fatal("the torn record was applied")
	}
	next := newMsg("after", "#c", at(4*time.Second), "after")
	mustAppend(t, s, next)
	if next.Seq != 9 {
		t.Fatalf("the next message got seq %d, want 9", next.Seq)
	}
	if err := s.Append(ctx, newMsg("lost-1", "#c", at(0), "again")); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("Append of a recovered msgid = %v, want ErrDuplicate", err)
	}
}

// TestIntakeSegmentsGo: the intake log starts new segments as it grows and removes those the
// database holds durably; a clean Close leaves none.
func TestIntakeSegmentsGo(t *testing.T) {
	defer func(old int64) { intakeSegmentBytes = old }(intakeSegmentBytes)
	intakeSegmentBytes = 4 << 10
	s, path := openTestStore(t, false)
	for i := range 400 {
		mustAppend(t, s, newMsg(fmt.Sprintf("seg-%03d", i), "#c", at(time.Duration(i)*time.Millisecond), "some text to fill the segments"))
	}
	// A delete is answered after the database's fsync, which covers every append before it; the
	// next append then lets the log drop the segments that fsync covers.
	if err := s.Delete(context.Background(), "seg-000", at(time.Hour)); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, newMsg("seg-last", "#c", at(time.Second), "the last"))
	// 400 records of ~150 bytes fill ~15 segments of 4 KiB; what is left is the segment being
	// written, the spare made ahead of it, and at most the one before. (The intake goroutine
	// removes segments after it has answered, so this waits for it.)
	waitUntil(t, func() bool { return segmentCount(t, path) <= 3 })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := segmentCount(t, path); n != 0 {
		t.Fatalf("%d intake segments after a clean Close, want none", n)
	}
}

func segmentCount(t *testing.T, dbPath string) int {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(intakeDir(dbPath), "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	return len(segs)
}

// TestIntakeLogIsLocked: a second store on the same database is refused while the first is open
// (each would apply and remove the other's segments), and opens once it is closed.
func TestIntakeLogIsLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(context.Background(), Options{Path: path, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	if other, err := Open(context.Background(), Options{Path: path, Logger: quietLogger}); err == nil {
		other.Close()
		t.Fatal("a second store opened on a database in use")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := Open(context.Background(), Options{Path: path, Logger: quietLogger})
	if err != nil {
		t.Fatalf("reopen after Close: %v", err)
	}
	again.Close()
}

func FuzzDecodeIntakeRecord(f *testing.F) {
	p := pendingMessage{Message: *newMsg("01FUZZ", "#c", at(0), "hello"), tagsJSON: `{"a":"b"}`}
	f.Add(appendIntakeRecord(nil, &p, 42))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeIntakeRecord(b)
		if err != nil {
			return
		}
		again := appendIntakeRecord(nil, &m, m.jseq)
		back, err := decodeIntakeRecord(again)
		if err != nil || back.MsgID != m.MsgID || back.Text != m.Text || back.jseq != m.jseq || !back.Time.Equal(m.Time) {
			t.Fatalf("round trip of a decoded record: %+v, %v; want %+v", back, err, m)
		}
	})
}
