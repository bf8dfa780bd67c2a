package eventstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// lingerStore opens a store whose writer lingers until a batch holds want messages (commitDelay
// is long enough never to end a wait in a test), and makes one shared batch so that the next
// small batch lingers.
func lingerStore(t *testing.T, want int) *Store {
	t.Helper()
	s, _ := openTestStore(t, false)
	// Set before any request is queued: the writer reads them after receiving one.
	s.commitDelay, s.lingerBelow = time.Hour, want
	for i, err := range appendInOneBatch(t, s, [][]*Message{
		{newMsg("prime-1", "#prime", at(0), "one")},
		{newMsg("prime-2", "#prime", at(time.Millisecond), "two")},
	}) {
		if err != nil {
			t.Fatalf("priming append %d: %v", i, err)
		}
	}
	return s
}

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

// TestWriterGathersConcurrentCallers: after a shared batch, callers arriving one by one while the
// writer lingers go into one commit, and every one of them is answered with its own seq.
func TestWriterGathersConcurrentCallers(t *testing.T) {
	const callers = 12
	s := lingerStore(t, callers)
	commitsBefore := s.wal.completed.Load()
	msgs := callerMessages("g", callers)
	for i, done := range appendEach(s, msgs) {
		if err := waitFor(t, done, "an Append of the gathered batch"); err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
	}
	if commits := s.wal.completed.Load() - commitsBefore; commits != 1 {
		t.Fatalf("%d callers took %d commits, want 1", callers, commits)
	}
	seen := map[int64]bool{}
	for _, m := range msgs {
		if m.Seq == 0 || seen[m.Seq] {
			t.Fatalf("message %s has seq %d (seen before: %v)", m.MsgID, m.Seq, seen[m.Seq])
		}
		seen[m.Seq] = true
		got, err := s.Get(context.Background(), m.MsgID)
		if err != nil || got.Seq != m.Seq {
			t.Fatalf("Get(%s) = seq %d, %v; want seq %d", m.MsgID, got.Seq, err, m.Seq)
		}
	}
}

// TestWriterLoneCallerIsNotHeld: a caller whose batches are never shared is committed at once,
// however long the writer may linger.
func TestWriterLoneCallerIsNotHeld(t *testing.T) {
	s, _ := openTestStore(t, false)
	s.commitDelay, s.lingerBelow = time.Hour, 64
	for i, m := range callerMessages("lone", 5) {
		done := appendEach(s, []*Message{m})[0]
		if err := waitFor(t, done, fmt.Sprintf("lone append %d", i)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWriterGatheredBatchAnswersAfterFsync: no caller of a gathered batch is answered before the
// fsync that covers the batch has returned.
func TestWriterGatheredBatchAnswersAfterFsync(t *testing.T) {
	const callers = 8
	s := lingerStore(t, callers)
	entered, release := holdSyncs(t, s, nil)
	defer release()
	msgs := callerMessages("d", callers)
	results := appendEach(s, msgs)
	waitFor(t, entered, "the fsync of the gathered batch")
	// The batch is committed (its rows are visible) while its fsync is held.
	waitUntil(t, func() bool {
		ok, err := s.Has(context.Background(), msgs[callers-1].MsgID)
		return err == nil && ok
	})
	for i, done := range results {
		select {
		case err := <-done:
			t.Fatalf("caller %d answered (%v) before the fsync covering its commit returned", i, err)
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

// TestWriterGatheredBatchFailsEveryCaller: when the fsync covering a gathered batch fails, every
// caller of the batch gets the error (none is told its message is durable), and so do later ones.
func TestWriterGatheredBatchFailsEveryCaller(t *testing.T) {
	const callers = 8
	s := lingerStore(t, callers)
	diskErr := errors.New("disk on fire")
	entered, release := holdSyncs(t, s, diskErr)
	results := appendEach(s, callerMessages("f", callers))
	waitFor(t, entered, "the fsync of the gathered batch")
	release()
	for i, done := range results {
		if err := waitFor(t, done, "an Append of the failed batch"); !errors.Is(err, diskErr) {
			t.Fatalf("caller %d = %v, want %v", i, err, diskErr)
		}
	}
	s.commitDelay = 0 // the later call comes alone: no lingering for company
	if err := s.Append(context.Background(), newMsg("later", "#c", at(time.Hour), "x")); !errors.Is(err, diskErr) {
		t.Fatalf("Append after the failed batch = %v, want %v", err, diskErr)
	}
}

// TestWriterGatheredBatchNoLossNoDuplicates: callers racing with the same msgids while the writer
// lingers store each msgid once; exactly one caller per msgid succeeds and the others are told it
// is a duplicate.
func TestWriterGatheredBatchNoLossNoDuplicates(t *testing.T) {
	const ids = 6
	s := lingerStore(t, 2*ids)
	var msgs []*Message
	for round := range 2 {
		for _, m := range callerMessages("dup", ids) {
			m.Text = fmt.Sprintf("round %d", round)
			msgs = append(msgs, m)
		}
	}
	won := map[string]int{}
	for i, done := range appendEach(s, msgs) {
		err := waitFor(t, done, "an Append")
		switch {
		case err == nil:
			won[msgs[i].MsgID]++
		case errors.Is(err, ErrDuplicate):
		default:
			t.Fatalf("append %d: %v", i, err)
		}
	}
	for _, m := range callerMessages("dup", ids) {
		if won[m.MsgID] != 1 {
			t.Fatalf("%s stored by %d callers, want 1", m.MsgID, won[m.MsgID])
		}
		if _, err := s.Get(context.Background(), m.MsgID); err != nil {
			t.Fatalf("Get(%s): %v", m.MsgID, err)
		}
	}
}
