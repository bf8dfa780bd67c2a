package eventstore

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// writeRequest is one Append or Delete call waiting for the group-commit writer. It holds copies:
// a caller that gives up (its context ends) may reuse its messages while the writer still works.
type writeRequest struct {
	ctx  context.Context
	msgs []pendingMessage // Append
	del  *deleteOp        // Delete
	done chan error       // buffered (1): the writer never blocks on a caller that gave up
	// queued is when the request was handed to the writer (set by submit).
	queued time.Time
}

// pendingMessage is a message on its way to the database.
type pendingMessage struct {
	Message
	tagsJSON string // encoded by the caller's goroutine, off the writer's critical path
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

// Append durably stores msgs. Concurrent calls are batched by one writer goroutine into one
// transaction; each call returns after its transaction committed. Seq is filled in on each stored
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
		for i := range pending {
			msgs[i].Seq = pending[i].seq
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
	req.queued = time.Now()
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

// runWriter is the group-commit loop: it takes the first waiting request, adds whatever else is
// already queued (up to maxBatch messages), and commits them in one transaction. While it commits,
// new requests queue up for the next batch, so one fsync covers many callers under load. A
// committed batch goes to the syncer (runSyncer), which answers it once it is durable; meanwhile
// the writer commits the next one.
//
// When the previous batch was shared (it held requests of two callers or more) and this one is
// still small, the writer lingers for more requests before it commits, until the batch's oldest
// request has waited commitDelay (see gather): a commit costs far more than the rows it adds (its
// WAL frames, its search-index segment, its fsync), so at a moderate rate from many callers,
// committing each request nearly on its own spends most of the store's CPU on commits. A request
// that already waited that long while the previous batch was written is committed at once: the
// queue filled meanwhile.
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
	batch := make([]*writeRequest, 0, s.maxBatch)
	var linger *time.Timer
	shared := false
	for first := range s.reqs {
		batch = append(batch[:0], first)
		n := first.size()
		var open bool
		batch, n, open = s.drainQueued(batch, n)
		if open && shared && n < s.lingerBelow {
			if wait := s.commitDelay - time.Since(first.queued); wait > 0 {
				if linger == nil {
					linger = time.NewTimer(wait)
				} else {
					linger.Reset(wait)
				}
				batch, n = s.gather(batch, n, linger.C)
				linger.Stop()
			}
		}
		shared = len(batch) > 1
		s.commitBatch(batch)
		clear(batch)
	}
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

// gather adds requests to batch as they arrive until it holds lingerBelow messages, the queue
// closes, or deadline fires.
func (s *Store) gather(batch []*writeRequest, n int, deadline <-chan time.Time) ([]*writeRequest, int) {
	for n < s.lingerBelow {
		select {
		case req, ok := <-s.reqs:
			if !ok {
				return batch, n
			}
			batch = append(batch, req)
			n += req.size()
		case <-deadline:
			return batch, n
		}
	}
	return batch, n
}

// committedBatch is a committed transaction's requests and their results, waiting for its fsync.
type committedBatch struct {
	reqs    []*writeRequest
	results []error
}

// runSyncer answers committed batches once they are durable: it takes every batch waiting, fsyncs
// the WAL once for all of them, and answers their requests (with the fsync's error if it failed).
func (s *Store) runSyncer(done chan<- struct{}) {
	defer close(done)
	var waiting []committedBatch
	for first := range s.acks {
		waiting = append(waiting[:0], first)
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
		err := s.wal.sync()
		if err != nil {
			s.log.Error("committed writes are not durable", "err", err)
		}
		for _, b := range waiting {
			for i, req := range b.reqs {
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
			req.done <- results[i]
		}
		return
	}
	s.acks <- committedBatch{reqs: reqs, results: results}
}

// commitBatch writes the batch in one transaction and answers every request. If the transaction
// fails, each request is retried in a transaction of its own so one bad request fails alone.
func (s *Store) commitBatch(batch []*writeRequest) {
	live := batch[:0:0]
	for _, req := range batch {
		if err := req.ctx.Err(); err != nil {
			req.done <- err
			continue
		}
		live = append(live, req)
	}
	if len(live) == 0 {
		return
	}
	if s.taken != nil {
		s.taken()
	}
	results, added, err := s.writeTx(live)
	if err == nil {
		s.count.Add(added)
		s.answer(live, results)
		return
	}
	if len(live) == 1 {
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
		s.generation.Add(1) // committed or not: a reader's cached answer is stale either way
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
	s.seqs.committed(reqs)
	return results, added, nil
}
