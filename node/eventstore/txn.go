package eventstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// writeTxn is what one group-commit transaction does: the writer's statements bound to the
// transaction, the search-index rows it will add, and its count of orphan edits.
//
// New index rows are queued and written at the end with as few statements as there can be
// (flushIndex, ftsrows.go): FTS5 flushes its pending changes into a new segment at every statement
// that writes to it inside a transaction, so one insert per message would make one segment per
// message and keep the merger busy.
//
// Orphan edits (whose root is not stored yet) are counted so that storing a root looks for early
// revisions only while some exist: the count starts from the store's, and the store adopts the
// transaction's count when it commits. The greatest okey stored (maxOkey) is kept the same way;
// new roots are queued in a run and stored together (roots.go).
type writeTxn struct {
	writeStatements
	sqlTx     *sql.Tx
	chunkSrc  *rootChunkStatements // the store's, prepared on the write connection
	chunks    rootChunkStatements  // those bound to sqlTx so far
	ftsSrc    *ftsChunkStatements  // the store's multi-row index inserts (ftsrows.go)
	ftsChunks ftsChunkStatements   // those bound to sqlTx so far
	run       []*pendingMessage    // new roots queued for flushRoots
	args      []any                // flushRoots' parameter buffer
	toIndex   map[int64]indexRow   // by root okey
	orphans   int64
	maxOkey   int64
	recent    *recentKeys     // the store's, as of the transaction's start
	keys      map[int64]int64 // millisecond → greatest okey this transaction gave a root in it
}

type indexRow struct {
	venue, body string
}

// writerScratch is what one transaction's writeTxn lends from the last: its buffers, empty.
type writerScratch struct {
	run     []*pendingMessage
	args    []any
	toIndex map[int64]indexRow
	keys    map[int64]int64
}

func (s *Store) newWriteTxn(ctx context.Context, tx *sql.Tx) *writeTxn {
	if s.scratch.toIndex == nil {
		s.scratch.toIndex = make(map[int64]indexRow)
		s.scratch.keys = make(map[int64]int64)
	}
	bound := &writeTxn{
		sqlTx: tx, chunkSrc: &s.rootChunks, ftsSrc: &s.ftsChunks, run: s.scratch.run, args: s.scratch.args, toIndex: s.scratch.toIndex,
		orphans: s.orphanEdits, maxOkey: s.maxOkey, recent: &s.recent, keys: s.scratch.keys,
	}
	dst, src := bound.all(), s.w.all()
	for i := range src {
		*dst[i].dst = tx.StmtContext(ctx, *src[i].dst)
	}
	return bound
}

// giveBack empties the transaction's buffers for the next one.
func (tx *writeTxn) giveBack() writerScratch {
	clear(tx.run)
	clear(tx.args)
	clear(tx.toIndex)
	clear(tx.keys)
	return writerScratch{run: tx.run[:0], args: tx.args[:0], toIndex: tx.toIndex, keys: tx.keys}
}

// index queues (or replaces) the search-index row of a root.
func (tx *writeTxn) index(okey int64, venue, body string) {
	tx.toIndex[okey] = indexRow{venue: venue, body: body}
}

// unindex removes a root from the search index, or from the queue when it was indexed in this
// transaction.
func (tx *writeTxn) unindex(ctx context.Context, okey int64) error {
	if _, queued := tx.toIndex[okey]; queued {
		delete(tx.toIndex, okey)
		return nil
	}
	if _, err := tx.ftsDelete.ExecContext(ctx, okey); err != nil {
		return fmt.Errorf("unindex okey %d: %w", okey, err)
	}
	return nil
}

// insertAll stores, or queues for flushRoots, one Append call's messages; a non-nil error is a
// database failure that aborts the transaction. Once the run is flushed, every message stored has
// its seq (appendOutcome).
func (tx *writeTxn) insertAll(ctx context.Context, msgs []pendingMessage) error {
	for i := range msgs {
		m := &msgs[i]
		if m.ReplacesMsgID == "" {
			if okey, ok := tx.newRootKey(m.Time.UnixMilli()); ok {
				tx.queueRoot(m, okey)
				continue
			}
		}
		if err := tx.flushRoots(ctx); err != nil {
			return err
		}
		if err := tx.insert(ctx, m); err != nil {
			return fmt.Errorf("eventstore: store %s: %w", m.MsgID, err)
		}
	}
	return nil
}

// appendOutcome is an Append call's own result once its messages went through the writer (nil,
// or the duplicates: those left without a seq), and how many it stored.
func appendOutcome(msgs []pendingMessage) (result error, added int64) {
	var dups []string
	for i := range msgs {
		if msgs[i].seq == 0 {
			dups = append(dups, msgs[i].MsgID)
			continue
		}
		added++
	}
	if len(dups) > 0 {
		result = fmt.Errorf("%w: %s", ErrDuplicate, strings.Join(dups, ", "))
	}
	return result, added
}

// storedRow is what the writer needs to know about an existing row.
type storedRow struct {
	seq        int64
	okey       int64 // 0 for an edit
	timeMs     int64
	venue      string
	replaces   string
	deletedAt  sql.NullInt64
	revTimeMs  sql.NullInt64
	revSeq     sql.NullInt64
	found      bool
	isRevision bool
}

func (tx *writeTxn) find(ctx context.Context, msgid string) (storedRow, error) {
	var r storedRow
	err := tx.findRow.QueryRowContext(ctx, msgid).Scan(&r.seq, &r.okey, &r.timeMs, &r.venue, &r.replaces, &r.deletedAt, &r.revTimeMs, &r.revSeq)
	if errors.Is(err, sql.ErrNoRows) {
		return storedRow{}, nil
	}
	if err != nil {
		return storedRow{}, fmt.Errorf("find %s: %w", msgid, err)
	}
	r.found, r.isRevision = true, r.replaces != ""
	return r, nil
}

// insert stores one message (the run of queued roots flushed) and sets its seq; a duplicate msgid
// leaves it 0.
func (tx *writeTxn) insert(ctx context.Context, m *pendingMessage) error {
	if m.ReplacesMsgID == "" {
		return tx.storeRoot(ctx, m)
	}
	return tx.storeEdit(ctx, m)
}

// storeRoot stores a root that is not for a run: one older than the newest stored millisecond
// (the database picks its okey).
func (tx *writeTxn) storeRoot(ctx context.Context, m *pendingMessage) error {
	timeMs := m.Time.UnixMilli()
	var seq, okey int64
	err := tx.insertRoot.QueryRowContext(ctx, m.MsgID, m.Venue, m.Command, m.Sender, m.SenderNick, m.SenderDID,
		m.Text, m.tagsJSON, timeMs, m.Origin, firstKeyOf(timeMs), firstKeyOf(timeMs+1), m.Incarnation, m.Public,
		resumeArg(m.ResumeFrom), m.jseq).Scan(&seq, &okey)
	if errors.Is(err, sql.ErrNoRows) { // a duplicate
		return nil
	}
	if err != nil {
		return err
	}
	m.seq, m.okey = seq, okey
	tx.noteKey(okey)
	return tx.linkEarlyRevisions(ctx, &m.Message, seq, okey)
}

// insertedSeq is the seq of the row an INSERT ... ON CONFLICT DO NOTHING stored, 0 if none.
func insertedSeq(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return 0, err
	}
	return res.LastInsertId()
}

// linkEarlyRevisions indexes a root just stored (its seq set), in the form of its newest revision
// when revisions arrived before it.
func (tx *writeTxn) linkEarlyRevisions(ctx context.Context, m *Message, seq, okey int64) error {
	if tx.orphans == 0 {
		tx.index(okey, m.Venue, m.Text)
		return nil
	}
	var (
		editSeq, editTimeMs   int64
		editID, editText, tag string
	)
	err := tx.latestEdit.QueryRowContext(ctx, m.MsgID).Scan(&editSeq, &editID, &editText, &tag, &editTimeMs)
	if errors.Is(err, sql.ErrNoRows) {
		tx.index(okey, m.Venue, m.Text)
		return nil
	}
	if err != nil {
		return fmt.Errorf("find early revisions of %s: %w", m.MsgID, err)
	}
	var linked int64
	if err := tx.countEdits.QueryRowContext(ctx, m.MsgID).Scan(&linked); err != nil {
		return fmt.Errorf("count early revisions of %s: %w", m.MsgID, err)
	}
	tx.orphans -= linked
	if _, err := tx.setRevision.ExecContext(ctx, editID, editText, tag, editTimeMs, editSeq, seq); err != nil {
		return err
	}
	tx.index(okey, m.Venue, editText)
	return nil
}

func (tx *writeTxn) storeEdit(ctx context.Context, m *pendingMessage) error {
	rootID := m.ReplacesMsgID
	root, err := tx.find(ctx, rootID)
	if err != nil {
		return err
	}
	if root.found && root.isRevision { // an edit of an edit revises the same root
		rootID = root.replaces
		if root, err = tx.find(ctx, rootID); err != nil {
			return err
		}
	}
	timeMs := m.Time.UnixMilli()
	res, err := tx.insertEdit.ExecContext(ctx, m.MsgID, m.Venue, m.Command, m.Sender, m.SenderNick, m.SenderDID,
		m.Text, m.tagsJSON, timeMs, rootID, m.Origin, m.Incarnation, m.Public, resumeArg(m.ResumeFrom), m.jseq)
	seq, err := insertedSeq(res, err)
	if seq == 0 || err != nil {
		return err
	}
	m.seq = seq
	switch {
	case !root.found || root.isRevision: // the root has not arrived; linkEarlyRevisions will link it
		tx.orphans++
		return nil
	case root.deletedAt.Valid: // a late revision of a deleted message stays deleted
		_, err := tx.markDeleted.ExecContext(ctx, root.deletedAt.Int64, seq)
		return err
	}
	newer := !root.revTimeMs.Valid || timeMs > root.revTimeMs.Int64 ||
		(timeMs == root.revTimeMs.Int64 && seq > root.revSeq.Int64)
	if !newer {
		return nil
	}
	if _, err := tx.setRevision.ExecContext(ctx, m.MsgID, m.Text, m.tagsJSON, timeMs, seq, root.seq); err != nil {
		return err
	}
	if err := tx.unindex(ctx, root.okey); err != nil {
		return err
	}
	tx.index(root.okey, root.venue, m.Text)
	return nil
}

// deleteRoot soft-deletes the root of op.msgid and its revisions. result is ErrNotFound or nil.
func (tx *writeTxn) deleteRoot(ctx context.Context, op *deleteOp) (result, err error) {
	row, err := tx.find(ctx, op.msgid)
	if err != nil {
		return nil, err
	}
	rootID := op.msgid
	if row.found && row.isRevision {
		rootID = row.replaces
		if row, err = tx.find(ctx, rootID); err != nil {
			return nil, err
		}
	}
	if !row.found || row.isRevision {
		return fmt.Errorf("%w: %s", ErrNotFound, op.msgid), nil
	}
	if row.deletedAt.Valid {
		return nil, nil
	}
	if _, err := tx.markDeleted.ExecContext(ctx, op.atMs, row.seq); err != nil {
		return nil, fmt.Errorf("eventstore: delete %s: %w", rootID, err)
	}
	if _, err := tx.deleteRevisionsOf.ExecContext(ctx, op.atMs, rootID); err != nil {
		return nil, fmt.Errorf("eventstore: delete revisions of %s: %w", rootID, err)
	}
	if err := tx.unindex(ctx, row.okey); err != nil {
		return nil, fmt.Errorf("eventstore: %w", err)
	}
	if op.origin != "" {
		if _, err := tx.recordDeletion.ExecContext(ctx, rootID, op.atMs, op.origin, op.by.Sender, op.by.SenderDID, op.byTags); err != nil {
			return nil, fmt.Errorf("eventstore: file delete of %s: %w", rootID, err)
		}
	}
	return nil, nil
}
