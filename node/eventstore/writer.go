package eventstore

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// databaseSyncEvery is how often at most the syncer fsyncs the database's log for acknowledged
// appends alone (a delete is answered after an fsync of its own at once).
const databaseSyncEvery = 200 * time.Millisecond

// writeRequest is one Append or Delete call on its way through the intake goroutine and the writer. It holds copies:
// a caller that gives up (its context ends) may reuse its messages while the writer still works.
type writeRequest struct {
	ctx  context.Context
	msgs []pendingMessage // Append
	del  *deleteOp        // Delete
	done chan error       // buffered (1): the writer never blocks on a caller that gave up
	// acked is set by the intake goroutine once it answered an Append (its messages are in the
	// intake log): the writer applies it without answering again. seqs is that answer's seq per
	// message of the call (0: a duplicate), read by Append.
	acked bool
	seqs  []int64
}

// pendingMessage is a message on its way to the database.
type pendingMessage struct {
	Message
	tagsJSON string // encoded by the caller's goroutine, off the writer's critical path
	jseq     int64  // the seq the intake log gave it; the row is stored under it
	seq      int64  // set by the writer, 0 when not stored
	okey     int64  // a stored root's, set by the writer
}

type deleteOp struct {
	msgid  string
	atMs   int64
	origin string // set when the delete was made on this node: it is filed for the other nodes
	by     Deleter
	byTags string
}

// Deleter is who made a delete, as the other nodes render it: the sender mask, DID and the tags of
// the delete event (its signature among them).
type Deleter struct {
	Sender, SenderDID string
	Tags              map[string]string
}

// size is how much of a batch the request takes.
func (r *writeRequest) size() int { return max(1, len(r.msgs)) }

// Append durably stores msgs. Concurrent calls are batched by the intake goroutine into one write
// of the intake log (intake.go); each call returns after the fsync that covers it, and every read
// that starts after it returns sees its messages (the writer applies them to the database a moment
// later, and reads wait for that). Seq is filled in on each stored
// element. A msgid that is already stored (or repeated within the call) is not stored again: its
// Seq stays 0, the call's other messages are stored, and the call returns an error wrapping
// ErrDuplicate that names the duplicates. A message that fails validation fails the whole call
// (ErrInvalidArgument) before anything is written.
//
// Edits (ReplacesMsgID set) may arrive before their root; they are linked when the root is stored.
// The store does not check authorship or that an edit's venue matches its root's: callers do
// (Root gives them the root row).
//
// If ctx ends after the call was queued, Append returns ctx.Err() but the write may still commit;
// retrying is safe because a stored msgid answers ErrDuplicate.
func (s *Store) Append(ctx context.Context, msgs ...*Message) error {
	if len(msgs) == 0 {
		return nil
	}
	pending := make([]pendingMessage, len(msgs))
	for i, m := range msgs {
		if err := validateMessage(m); err != nil {
			return err
		}
		tags, err := encodeTags(m.Tags)
		if err != nil {
			return fmt.Errorf("%w: message %s: %w", ErrInvalidArgument, m.MsgID, err)
		}
		m.Seq = 0
		s.stamp(m)
		pending[i] = pendingMessage{Message: *m, tagsJSON: tags}
	}
	req := &writeRequest{ctx: ctx, msgs: pending, done: make(chan error, 1)}
	err := s.submit(ctx, req)
	if err == nil || errors.Is(err, ErrDuplicate) {
		for i := range msgs {
			msgs[i].Seq = req.seqs[i]
		}
	}
	return err
}

// Delete soft-deletes a root and all its revisions at time at: they leave every view and the search
// index, and Get reports DeletedAt. Given an edit's msgid, it deletes that edit's root (so deleting
// by an edit's id never resurrects the original). Deleting a deleted message is a no-op; an
// unknown msgid (or an edit whose root is not stored) is ErrNotFound.
func (s *Store) Delete(ctx context.Context, rootMsgID string, at time.Time) error {
	return s.delete(ctx, rootMsgID, at, "", Deleter{})
}

// DeleteAt is Delete for a delete made on this node (origin): in the same transaction the delete
// is filed in the deletions log that other nodes copy (see DeletionsAfter). A delete of a message
// that is already deleted files nothing.
func (s *Store) DeleteAt(ctx context.Context, rootMsgID string, at time.Time, origin string, by Deleter) error {
	if origin == "" {
		return fmt.Errorf("%w: DeleteAt without origin", ErrInvalidArgument)
	}
	return s.delete(ctx, rootMsgID, at, origin, by)
}

func (s *Store) delete(ctx context.Context, rootMsgID string, at time.Time, origin string, by Deleter) error {
	if rootMsgID == "" {
		return fmt.Errorf("%w: Delete without msgid", ErrInvalidArgument)
	}
	tags, err := encodeTags(by.Tags)
	if err != nil {
		return fmt.Errorf("%w: delete tags: %w", ErrInvalidArgument, err)
	}
	op := &deleteOp{msgid: rootMsgID, atMs: at.UnixMilli(), origin: origin, by: by, byTags: tags}
	return s.submit(ctx, &writeRequest{ctx: ctx, del: op, done: make(chan error, 1)})
}

func validateMessage(m *Message) error {
	var problem string
	switch {
	case m == nil:
		problem = "nil message"
	case m.MsgID == "":
		problem = "message without msgid"
	case m.Venue == "":
		problem = "message " + m.MsgID + " without venue"
	case m.Command != "PRIVMSG" && m.Command != "NOTICE" && m.Command != "TAGMSG":
		problem = fmt.Sprintf("message %s has command %q", m.MsgID, m.Command)
	case m.Time.IsZero():
		problem = "message " + m.MsgID + " without time"
	case m.ReplacesMsgID == m.MsgID:
		problem = "message " + m.MsgID + " replaces itself"
	default:
		if err := validTime(m.Time); err != nil {
			problem = "message " + m.MsgID + ": " + err.Error()
			break
		}
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidArgument, problem)
}

// submit queues req for the writer and waits for its commit.
func (s *Store) submit(ctx context.Context, req *writeRequest) error {
	s.sendMu.RLock()
	if s.closed.Load() {
		s.sendMu.RUnlock()
		return ErrClosed
	}
	select {
	case s.reqs <- req:
		s.sendMu.RUnlock()
	case <-ctx.Done():
		s.sendMu.RUnlock()
		return ctx.Err()
	}
	// Once the writer holds the request it always answers, and the answer is the truth: a caller
	// that gave up here could report a failure for a write that commits a moment later (a pushed
	// event stored but never delivered live, because its retry then finds a duplicate).
	return <-req.done
}

// runWriter applies what the intake goroutine hands on, in its order: it takes the first waiting
// batch and gathers what follows it for up to applyLinger (or applyMax messages), then commits
// them in one transaction. The messages are acknowledged already, so the wait costs no caller
// anything, and a commit's fixed cost (the tail pages of every venue it touches, rewritten in the
// database's log and copied again by the checkpoint; its search-index segment) is shared by more
// messages: on a shared disk those writes are what delays the intake log's own syncs. The
// gathering stops at once when a request needs an answer (a delete) or a read waits for the
// writer (waitApplied), so reads see an acknowledged message within a commit's time. The gathering
// is short (10 ms): longer ones (50 ms) made each commit a stall long enough to show in B4's
// delivery p99 on two cores. A committed transaction goes to the syncer (runSyncer), which fsyncs
// the database's log, answers the deletes in it, and lets the intake log drop the segments it
// covers; meanwhile the writer commits the next one.
func (s *Store) runWriter() {
	defer close(s.writerDone)
	if s.acks != nil {
		syncerDone := make(chan struct{})
		go s.runSyncer(syncerDone)
		defer func() {
			close(s.acks)
			<-syncerDone
		}()
	}
	var batch []*writeRequest
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for first := range s.applyQ {
		batch = append(batch[:0], first...)
		n := requestsSize(first)
		linger.Reset(s.applyLinger)
	gather:
		for n < s.applyMax && allAcked(batch) && s.waitingReaders.Load() == 0 {
			select {
			case more, ok := <-s.applyQ:
				if !ok {
					break gather
				}
				batch = append(batch, more...)
				n += requestsSize(more)
			case <-linger.C:
				break gather
			case <-s.readerWaiting: // the loop's condition looks again
			}
		}
		linger.Stop()
		if s.applying != nil {
			s.applying()
		}
		s.commitBatch(batch)
		clear(batch)
	}
}

func allAcked(reqs []*writeRequest) bool {
	for _, r := range reqs {
		if !r.acked {
			return false
		}
	}
	return true
}

func requestsSize(reqs []*writeRequest) int {
	n := 0
	for _, r := range reqs {
		n += r.size()
	}
	return n
}

// drainQueued adds the requests already queued to batch, up to maxBatch messages. open is false
// once the queue is closed.
func (s *Store) drainQueued(batch []*writeRequest, n int) (_ []*writeRequest, _ int, open bool) {
	for n < s.maxBatch {
		select {
		case req, ok := <-s.reqs:
			if !ok {
				return batch, n, false
			}
			batch = append(batch, req)
			n += req.size()
		default:
			return batch, n, true
		}
	}
	return batch, n, true
}

// committedBatch is a committed transaction's requests and their results, waiting for its fsync.
type committedBatch struct {
	reqs    []*writeRequest
	results []error
	maxSeq  int64 // the greatest intake seq it applied
}

// runSyncer answers committed batches once they are durable: it takes every batch waiting, fsyncs
// the WAL once for all of them, and answers their requests (with the fsync's error if it failed).
func (s *Store) runSyncer(done chan<- struct{}) {
	defer close(done)
	var waiting []committedBatch
	var owed int64 // the greatest seq applied and not yet fsynced
	var lastSync time.Time
	syncOwed := func() {
		if owed <= s.durableSeq.Load() {
			return
		}
		if err := s.wal.sync(); err != nil {
			s.log.Error("committed writes are not durable", "err", err)
			return
		}
		s.durableSeq.Store(owed)
	}
	defer syncOwed()
	for first := range s.acks {
		waiting = append(waiting[:0], first)
		answers := false
	drain:
		for {
			select {
			case b, ok := <-s.acks:
				if !ok {
					break drain
				}
				waiting = append(waiting, b)
			default:
				break drain
			}
		}
		for _, b := range waiting {
			owed = max(owed, b.maxSeq)
			answers = answers || !allAcked(b.reqs)
		}
		// Acknowledged appends are durable in the intake log already: their fsync here only lets
		// the log drop a segment, so it waits for a request that does need it or for
		// databaseSyncEvery.
		if !answers && time.Since(lastSync) < databaseSyncEvery {
			clear(waiting)
			continue
		}
		err := s.wal.sync()
		lastSync = time.Now()
		if err != nil {
			s.log.Error("committed writes are not durable", "err", err)
		} else if owed > s.durableSeq.Load() {
			s.durableSeq.Store(owed)
		}
		for _, b := range waiting {
			for i, req := range b.reqs {
				if req.acked {
					continue
				}
				if err != nil {
					req.done <- err
					continue
				}
				req.done <- b.results[i]
			}
		}
		clear(waiting)
	}
}

// answer hands a committed batch to the syncer, or answers it at once without fsync (NoSync).
func (s *Store) answer(reqs []*writeRequest, results []error) {
	if s.acks == nil {
		for i, req := range reqs {
			if !req.acked {
				req.done <- results[i]
			}
		}
		return
	}
	s.acks <- committedBatch{reqs: reqs, results: results, maxSeq: maxIntakeSeq(reqs)}
}

// commitBatch writes the batch in one transaction and answers every request. If the transaction
// fails, each request is retried in a transaction of its own so one bad request fails alone.
func (s *Store) commitBatch(batch []*writeRequest) {
	live := batch[:0:0]
	for _, req := range batch {
		if err := req.ctx.Err(); err != nil && !req.acked { // an acknowledged append is applied whatever its caller does
			req.done <- err
			continue
		}
		live = append(live, req)
	}
	if len(live) == 0 {
		return
	}
	results, added, err := s.writeTx(live)
	if err == nil {
		s.count.Add(added)
		s.markApplied(live) // visible now; reads need not wait for the fsync below
		s.answer(live, results)
		return
	}
	if len(live) == 1 {
		s.markApplied(live)
		if live[0].acked {
			s.keepIntake.Store(true)
			s.log.Error("acknowledged messages could not be applied to the database: the intake log keeps them, and the next start applies them",
				"messages", len(live[0].msgs), "first", live[0].msgs[0].MsgID, "err", err)
			return
		}
		s.log.Error("write failed", "err", err)
		live[0].done <- err
		return
	}
	s.log.Warn("batch write failed; retrying its requests one by one", "requests", len(live), "err", err)
	for _, req := range live {
		s.commitBatch([]*writeRequest{req})
	}
}

// writeTx applies the requests in one transaction. It returns each request's own result (nil,
// duplicates, not found) and the number of rows added; a non-nil error means nothing committed.
// Only the writer goroutine calls it.
func (s *Store) writeTx(reqs []*writeRequest) (results []error, added int64, err error) {
	ctx := context.Background() // the batch outlives any one caller's context
	defer func() {
		if !allAcked(reqs) { // acknowledged appends moved it when the intake log took them
			s.generation.Add(1) // committed or not: a reader's cached answer is stale either way
		}
		if err != nil {
			for _, req := range reqs {
				for i := range req.msgs {
					req.msgs[i].seq = 0
				}
			}
		}
	}()
	sqlTx, err := s.writeDB.BeginTx(ctx, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("eventstore: begin: %w", err)
	}
	defer sqlTx.Rollback() //nolint:errcheck // after Commit this is a no-op
	tx := s.newWriteTxn(ctx, sqlTx)
	defer func() { s.scratch = tx.giveBack() }()
	results = make([]error, len(reqs))
	for i, req := range reqs {
		if req.del != nil {
			if err = tx.flushRoots(ctx); err == nil {
				results[i], err = tx.deleteRoot(ctx, req.del)
			}
		} else {
			err = tx.insertAll(ctx, req.msgs)
		}
		if err != nil {
			return nil, 0, err
		}
	}
	if err := tx.flushRoots(ctx); err != nil {
		return nil, 0, err
	}
	for i, req := range reqs {
		if req.del == nil {
			var n int64
			results[i], n = appendOutcome(req.msgs)
			added += n
		}
	}
	if err := tx.flushIndex(ctx); err != nil {
		return nil, 0, err
	}
	committed := s.committing()
	err = sqlTx.Commit()
	committed()
	if err != nil {
		return nil, 0, fmt.Errorf("eventstore: commit: %w", err)
	}
	s.orphanEdits, s.maxOkey = tx.orphans, tx.maxOkey
	s.recent.merge(tx.keys)
	return results, added, nil
}
