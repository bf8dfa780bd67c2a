package eventstore

import (
	"context"
	"database/sql"
	"fmt"
	"math/bits"
	"os"
	"strings"
)

// The intake goroutine: Append's acknowledgement.
//
// runIntake takes the queued requests in order. For a batch of Append calls it decides which
// messages are new (a msgid neither stored in the database nor waiting in the intake log, nor
// earlier in the batch), gives each new one the next seq, writes them to the intake log with one
// write and one fdatasync, and answers the callers; then it hands the batch, in order, to the
// writer, which applies it to the database. A Delete is not logged: it goes to the writer in its
// place in the order and is answered once applied and durable there. Requests queue up while a
// sync runs, so one sync covers every call that arrived meanwhile.
//
// Reads wait for the writer (waitApplied): a read that starts after an Append returned sees its
// messages. The wait is the time the writer is behind the log, milliseconds when it keeps up; the
// queue to the writer is bounded (applyQueueBatches), so when it does not, the intake log waits
// for it and Append slows down rather than the lag growing.

// applyQueueBatches bounds how many intake batches wait for the writer: under load a batch is
// the calls of one fdatasync (a millisecond's worth), and a commit of the writer takes tens of
// milliseconds, through which the intake log must go on; at most MaxBatch messages each, it
// bounds the messages acknowledged and not applied.
const applyQueueBatches = 256

// sqlStoredMsgIDs lists which of up to n msgids are stored; a NULL parameter is padding (it matches
// nothing). A statement exists for 1, 2, 4, ..., maxStoredIDsChunk msgids (storedIDChunks); a batch
// asks the smallest that holds its msgids, one index lookup each, with no document to encode and
// parse (a JSON array and json_each cost more than the lookups).
func sqlStoredMsgIDs(n int) string {
	return `SELECT msgid FROM messages WHERE msgid IN (?` + strings.Repeat(",?", n-1) + `)`
}

// sqlGreatestMsgID is the greatest msgid stored, "" for none: one step down the msgid index.
const sqlGreatestMsgID = `SELECT coalesce(max(msgid), '') FROM messages`

const (
	storedIDsChunkSizes = 10 // statements for 1 to maxStoredIDsChunk msgids
	maxStoredIDsChunk   = 1 << (storedIDsChunkSizes - 1)
)

// storedIDChunks are the sqlStoredMsgIDs statements, prepared on the readers.
type storedIDChunks [storedIDsChunkSizes]*sql.Stmt

func (c *storedIDChunks) all() []namedStatement { return chunkStatements(c[:], sqlStoredMsgIDs) }

func (s *Store) runIntake() {
	defer close(s.applyQ)
	batch := make([]*writeRequest, 0, s.maxBatch)
	for first := range s.reqs {
		batch = append(batch[:0], first)
		batch, _, _ = s.drainQueued(batch, first.size())
		s.takeIn(batch)
		clear(batch)
	}
}

// takeIn acknowledges a batch's appends through the intake log and hands the batch on to the
// writer.
func (s *Store) takeIn(batch []*writeRequest) {
	live := make([]*writeRequest, 0, len(batch))
	var appends []*writeRequest
	for _, req := range batch {
		if err := req.ctx.Err(); err != nil {
			req.done <- err
			continue
		}
		live = append(live, req)
		if req.del == nil {
			appends = append(appends, req)
		}
	}
	if s.taken != nil {
		s.taken()
	}
	if len(appends) > 0 {
		if err := s.admit(appends); err != nil {
			s.log.Error("appends not acknowledged", "requests", len(appends), "err", err)
			for _, req := range appends {
				req.done <- err
			}
			live = deletesOnly(live)
		} else {
			live = withoutEmptyAppends(live)
		}
	}
	if len(live) > 0 {
		s.applyQ <- live
	}
}

func deletesOnly(reqs []*writeRequest) []*writeRequest {
	out := reqs[:0]
	for _, r := range reqs {
		if r.del != nil {
			out = append(out, r)
		}
	}
	return out
}

func withoutEmptyAppends(reqs []*writeRequest) []*writeRequest {
	out := reqs[:0]
	for _, r := range reqs {
		if r.del != nil || len(r.msgs) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// admit logs the new messages of appends and answers each call. On error nothing is answered and
// nothing of the batch is left pending.
func (s *Store) admit(appends []*writeRequest) error {
	if s.intakeErr != nil {
		return s.intakeErr
	}
	// A msgid pending now is a duplicate. One that is not is either new or already applied, and an
	// applied one is in the database by the time the query below runs (the writer commits before
	// it lets go of a pending msgid); one above storedCeiling is new.
	marks := make([][]bool, len(appends))
	var ask []string
	s.pendingMu.Lock()
	for i, req := range appends {
		marks[i] = make([]bool, len(req.msgs))
		for j := range req.msgs {
			id := req.msgs[j].MsgID
			if _, ok := s.pendingIDs[id]; ok {
				marks[i][j] = true
				continue
			}
			if id > s.storedCeiling {
				continue
			}
			ask = append(ask, id)
		}
	}
	s.pendingMu.Unlock()
	stored, err := s.storedMsgIDs(ask)
	if err != nil {
		return err
	}
	first := s.nextSeq
	var added []string
	s.pendingMu.Lock()
	for i, req := range appends {
		req.seqs = make([]int64, len(req.msgs))
		for j := range req.msgs {
			m := &req.msgs[j]
			if marks[i][j] || stored[m.MsgID] {
				continue
			}
			if _, ok := s.pendingIDs[m.MsgID]; ok { // earlier in this batch
				continue
			}
			m.jseq = s.nextSeq
			s.nextSeq++
			req.seqs[j] = m.jseq
			s.pendingIDs[m.MsgID] = struct{}{}
			added = append(added, m.MsgID)
			s.intake.add(m, m.jseq)
		}
	}
	s.pendingMu.Unlock()
	if err := s.intake.flush(first); err != nil {
		// Sticky: what reached the file is unknown, so nothing more is acknowledged.
		s.intakeErr = err
		s.pendingMu.Lock()
		for _, id := range added {
			delete(s.pendingIDs, id)
		}
		s.pendingMu.Unlock()
		return err
	}
	if s.nextSeq > first {
		s.ackedSeq.Store(s.nextSeq - 1) // before any answer: a read after one waits for the writer
	}
	s.generation.Add(1) // before any answer (the writer's commit of these moves it no further)
	s.seqs.committed(appends)
	for _, req := range appends {
		var dups []string
		kept := req.msgs[:0]
		for j := range req.msgs {
			if req.seqs[j] == 0 {
				dups = append(dups, req.msgs[j].MsgID)
				continue
			}
			kept = append(kept, req.msgs[j])
		}
		req.msgs = kept
		req.acked = true
		var result error
		if len(dups) > 0 {
			result = fmt.Errorf("%w: %s", ErrDuplicate, strings.Join(dups, ", "))
		}
		req.done <- result
	}
	durable := s.durableSeq.Load()
	if s.keepIntake.Load() {
		durable = 0
	}
	if err := s.intake.removeApplied(durable); err != nil {
		s.log.Warn("intake log segments", "err", err)
	}
	return nil
}

// storedMsgIDs reports which of ids the database holds.
func (s *Store) storedMsgIDs(ids []string) (map[string]bool, error) {
	var out map[string]bool
	args := make([]any, 0, min(len(ids), maxStoredIDsChunk))
	for len(ids) > 0 {
		n := min(len(ids), maxStoredIDsChunk)
		level := bits.Len(uint(n - 1)) // the smallest statement that holds them
		args = args[:0]
		for _, id := range ids[:n] {
			args = append(args, id)
		}
		for range 1<<level - n {
			args = append(args, nil)
		}
		ids = ids[n:]
		if err := s.collectStored(s.storedIDs[level], args, &out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// collectStored runs one sqlStoredMsgIDs statement and adds the msgids it finds to *out.
func (s *Store) collectStored(stmt *sql.Stmt, args []any, out *map[string]bool) error {
	rows, err := stmt.QueryContext(context.Background(), args...)
	if err != nil {
		return fmt.Errorf("eventstore: look up msgids: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return fmt.Errorf("eventstore: look up msgids: %w", err)
		}
		if *out == nil {
			*out = map[string]bool{}
		}
		(*out)[id] = true
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("eventstore: look up msgids: %w", err)
	}
	return nil
}

func maxIntakeSeq(reqs []*writeRequest) int64 {
	var top int64
	for _, r := range reqs {
		for i := range r.msgs {
			top = max(top, r.msgs[i].jseq)
		}
	}
	return top
}

// markApplied records that the writer is done with reqs (applied, or failed and logged): their
// msgids stop being pending and the reads waiting for them go on.
func (s *Store) markApplied(reqs []*writeRequest) {
	top := maxIntakeSeq(reqs)
	if top == 0 {
		return
	}
	s.pendingMu.Lock()
	for _, r := range reqs {
		for i := range r.msgs {
			id := r.msgs[i].MsgID
			delete(s.pendingIDs, id)
			s.storedCeiling = max(s.storedCeiling, id)
		}
	}
	s.pendingMu.Unlock()
	if s.acks == nil {
		s.durableSeq.Store(top) // no fsync to wait for
	}
	s.appliedSeq.Store(top)
	s.appliedMu.Lock()
	close(s.appliedCh)
	s.appliedCh = make(chan struct{})
	s.appliedMu.Unlock()
}

// waitApplied returns once the database holds every message acknowledged before the call.
func (s *Store) waitApplied(ctx context.Context) error {
	target := s.ackedSeq.Load()
	if s.appliedSeq.Load() >= target {
		return nil
	}
	s.waitingReaders.Add(1) // the writer stops gathering and commits
	defer s.waitingReaders.Add(-1)
	select {
	case s.readerWaiting <- struct{}{}:
	default:
	}
	for s.appliedSeq.Load() < target {
		s.appliedMu.Lock()
		ch := s.appliedCh
		s.appliedMu.Unlock()
		if s.appliedSeq.Load() >= target {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// recoverIntake applies what the intake log at abs holds beyond the database (the messages
// acknowledged before a crash and not yet applied then), makes it durable, and starts an empty
// log whose next seq follows every seq given so far.
func (s *Store) recoverIntake(ctx context.Context, abs string, noSync bool) (err error) {
	dir := intakeDir(abs)
	var lock *os.File
	if !noSync {
		if lock, err = lockIntake(dir); err != nil {
			return err
		}
		defer func() {
			if err != nil {
				lock.Close()
			}
		}()
	}
	recs, paths, topSegment, err := readIntake(dir)
	if err != nil {
		return err
	}
	var given int64 // the greatest seq the database ever gave (AUTOINCREMENT keeps it)
	if err := s.writeDB.QueryRowContext(ctx,
		`SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0)`).Scan(&given); err != nil {
		return fmt.Errorf("eventstore: read the greatest seq given: %w", err)
	}
	// A record is applied again unless its msgid is stored: the database may have lost the last
	// transactions before its log was fsynced, and a message the writer failed to apply is below
	// seqs it did apply.
	top := given
	var todo []pendingMessage
	for len(recs) > 0 {
		chunk := recs[:min(len(recs), 512)]
		recs = recs[len(chunk):]
		idsOf := make([]string, len(chunk))
		for i := range chunk {
			idsOf[i] = chunk[i].MsgID
		}
		stored, err := s.storedMsgIDs(idsOf)
		if err != nil {
			return err
		}
		for _, r := range chunk {
			if !stored[r.MsgID] {
				todo = append(todo, r)
			}
			top = max(top, r.jseq)
		}
	}
	recovered := len(todo)
	for len(todo) > 0 {
		n := min(len(todo), s.applyMax)
		req := &writeRequest{ctx: ctx, msgs: todo[:n], acked: true}
		_, added, err := s.writeTx([]*writeRequest{req})
		if err != nil {
			return fmt.Errorf("eventstore: apply the intake log: %w", err)
		}
		s.count.Add(added)
		todo = todo[n:]
	}
	if recovered > 0 && s.wal != nil {
		if err := s.wal.sync(); err != nil {
			return err
		}
	}
	if s.intake, err = openIntake(dir, topSegment, top+1, paths, noSync); err != nil {
		return err
	}
	s.intake.lock = lock
	if err := s.writeDB.QueryRowContext(ctx, sqlGreatestMsgID).Scan(&s.storedCeiling); err != nil {
		return fmt.Errorf("eventstore: read the greatest msgid: %w", err)
	}
	s.nextSeq = top + 1
	s.seqs = newRecentSeqs(top) // complete above every row stored now
	s.ackedSeq.Store(top)
	s.appliedSeq.Store(top)
	s.durableSeq.Store(top)
	if recovered > 0 {
		s.log.Info("applied acknowledged messages from the intake log", "messages", recovered)
	}
	return nil
}
