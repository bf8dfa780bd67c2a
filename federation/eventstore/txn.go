package eventstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// writeTxn is what one group-commit transaction does: the writer's statements bound to the
// transaction, the search-index rows it will add, and its count of orphan edits.
//
// New index rows are queued and written by one statement at the end (flushIndex). FTS5 flushes its
// pending changes into a new segment at every statement that writes to it inside a transaction,
// so one insert per message would make one segment per message and keep the merger busy; one
// insert per batch makes one segment per batch.
//
// Orphan edits (whose root is not stored yet) are counted so that storing a root looks for early
// revisions only while some exist: the count starts from the store's, and the store adopts the
// transaction's count when it commits.
type writeTxn struct {
	writeStatements
	toIndex map[int64]indexRow // by root seq
	orphans int64
}

type indexRow struct {
	timeMs      int64
	venue, body string
}

func (s *Store) newWriteTxn(ctx context.Context, tx *sql.Tx) *writeTxn {
	bound := &writeTxn{toIndex: make(map[int64]indexRow), orphans: s.orphanEdits}
	dst, src := bound.all(), s.w.all()
	for i := range src {
		*dst[i].dst = tx.StmtContext(ctx, *src[i].dst)
	}
	return bound
}

// index queues (or replaces) the search-index row of a root.
func (tx *writeTxn) index(seq, timeMs int64, venue, body string) {
	tx.toIndex[seq] = indexRow{timeMs: timeMs, venue: venue, body: body}
}

// unindex removes a root from the search index, or from the queue when it was indexed in this
// transaction.
func (tx *writeTxn) unindex(ctx context.Context, seq, okey int64) error {
	if _, queued := tx.toIndex[seq]; queued {
		delete(tx.toIndex, seq)
		return nil
	}
	if _, err := tx.ftsDelete.ExecContext(ctx, okey); err != nil {
		return fmt.Errorf("unindex %d: %w", seq, err)
	}
	return nil
}

// flushIndex writes the queued index rows with one statement.
func (tx *writeTxn) flushIndex(ctx context.Context) error {
	if len(tx.toIndex) == 0 {
		return nil
	}
	// FTS5 flushes its pending data whenever a rowid is not greater than the previous one, so the
	// rows go in ascending rowid (-okey) order: newest (time, seq) first.
	seqs := slices.Collect(maps.Keys(tx.toIndex))
	slices.SortFunc(seqs, func(a, b int64) int {
		ta, tb := tx.toIndex[a].timeMs, tx.toIndex[b].timeMs
		if ta != tb {
			return cmp.Compare(tb, ta)
		}
		return cmp.Compare(b, a)
	})
	rows := make([][3]any, 0, len(seqs))
	for _, seq := range seqs {
		r := tx.toIndex[seq]
		rows = append(rows, [3]any{seq, venueToken(r.venue), r.body})
	}
	doc, err := json.Marshal(rows)
	if err != nil {
		return fmt.Errorf("eventstore: encode index rows: %w", err)
	}
	if _, err := tx.ftsInsertMany.ExecContext(ctx, string(doc)); err != nil {
		return fmt.Errorf("eventstore: index %d messages: %w", len(rows), err)
	}
	clear(tx.toIndex)
	return nil
}

// insertAll stores one Append call's messages. result is the call's own outcome (nil or
// duplicates); err is a database failure that aborts the transaction.
func (tx *writeTxn) insertAll(ctx context.Context, msgs []pendingMessage) (result error, added int64, err error) {
	var dups []string
	for i := range msgs {
		m := &msgs[i]
		stored, err := tx.insert(ctx, m)
		if err != nil {
			return nil, 0, fmt.Errorf("eventstore: store %s: %w", m.MsgID, err)
		}
		if !stored {
			dups = append(dups, m.MsgID)
			continue
		}
		added++
	}
	if len(dups) > 0 {
		result = fmt.Errorf("%w: %s", ErrDuplicate, strings.Join(dups, ", "))
	}
	return result, added, nil
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

// insert stores one message and sets its seq; stored is false for a duplicate msgid.
func (tx *writeTxn) insert(ctx context.Context, m *pendingMessage) (stored bool, err error) {
	if m.ReplacesMsgID == "" {
		return tx.storeRoot(ctx, m)
	}
	return tx.storeEdit(ctx, m)
}

func (tx *writeTxn) storeRoot(ctx context.Context, m *pendingMessage) (stored bool, err error) {
	timeMs := m.Time.UnixMilli()
	res, err := tx.insertRoot.ExecContext(ctx, m.MsgID, m.Venue, m.Command, m.Sender, m.SenderNick, m.SenderDID,
		m.Text, m.tagsJSON, timeMs, m.Origin, firstKeyOf(timeMs), firstKeyOf(timeMs+1))
	seq, err := insertedSeq(res, err)
	if seq == 0 || err != nil {
		return false, err
	}
	m.seq = seq
	return true, tx.linkEarlyRevisions(ctx, &m.Message, seq, timeMs)
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

// linkEarlyRevisions indexes a root just stored, in the form of its newest revision when
// revisions arrived before it.
func (tx *writeTxn) linkEarlyRevisions(ctx context.Context, m *Message, seq, timeMs int64) error {
	if tx.orphans == 0 {
		tx.index(seq, timeMs, m.Venue, m.Text)
		return nil
	}
	var (
		editSeq, editTimeMs   int64
		editID, editText, tag string
	)
	err := tx.latestEdit.QueryRowContext(ctx, m.MsgID).Scan(&editSeq, &editID, &editText, &tag, &editTimeMs)
	if errors.Is(err, sql.ErrNoRows) {
		tx.index(seq, timeMs, m.Venue, m.Text)
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
	tx.index(seq, timeMs, m.Venue, editText)
	return nil
}

func (tx *writeTxn) storeEdit(ctx context.Context, m *pendingMessage) (stored bool, err error) {
	rootID := m.ReplacesMsgID
	root, err := tx.find(ctx, rootID)
	if err != nil {
		return false, err
	}
	if root.found && root.isRevision { // an edit of an edit revises the same root
		rootID = root.replaces
		if root, err = tx.find(ctx, rootID); err != nil {
			return false, err
		}
	}
	timeMs := m.Time.UnixMilli()
	res, err := tx.insertEdit.ExecContext(ctx, m.MsgID, m.Venue, m.Command, m.Sender, m.SenderNick, m.SenderDID,
		m.Text, m.tagsJSON, timeMs, rootID, m.Origin)
	seq, err := insertedSeq(res, err)
	if seq == 0 || err != nil {
		return false, err
	}
	m.seq = seq
	switch {
	case !root.found || root.isRevision: // the root has not arrived; linkEarlyRevisions will link it
		tx.orphans++
		return true, nil
	case root.deletedAt.Valid: // a late revision of a deleted message stays deleted
		_, err := tx.markDeleted.ExecContext(ctx, root.deletedAt.Int64, seq)
		return true, err
	}
	newer := !root.revTimeMs.Valid || timeMs > root.revTimeMs.Int64 ||
		(timeMs == root.revTimeMs.Int64 && seq > root.revSeq.Int64)
	if !newer {
		return true, nil
	}
	if _, err := tx.setRevision.ExecContext(ctx, m.MsgID, m.Text, m.tagsJSON, timeMs, seq, root.seq); err != nil {
		return true, err
	}
	if err := tx.unindex(ctx, root.seq, root.okey); err != nil {
		return true, err
	}
	tx.index(root.seq, root.timeMs, root.venue, m.Text)
	return true, nil
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
	if err := tx.unindex(ctx, row.seq, row.okey); err != nil {
		return nil, fmt.Errorf("eventstore: %w", err)
	}
	if op.origin != "" {
		if _, err := tx.recordDeletion.ExecContext(ctx, rootID, op.atMs, op.origin, op.by.Sender, op.by.SenderDID, op.byTags); err != nil {
			return nil, fmt.Errorf("eventstore: file delete of %s: %w", rootID, err)
		}
	}
	return nil, nil
}
