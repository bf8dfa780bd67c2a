package eventstore

import (
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
// transaction, and the search-index rows it will add.
//
// New index rows are queued and written by one statement at the end (flushIndex). FTS5 flushes its
// pending changes into a new segment at every statement that writes to it inside a transaction,
// so one insert per message would make one segment per message and keep the merger busy; one
// insert per batch makes one segment per batch.
type writeTxn struct {
	writeStatements
	toIndex map[int64]indexRow // by okey
}

type indexRow struct{ venue, body string }

func (s *Store) newWriteTxn(ctx context.Context, tx *sql.Tx) *writeTxn {
	bound := &writeTxn{toIndex: make(map[int64]indexRow)}
	dst, src := bound.all(), s.w.all()
	for i := range src {
		*dst[i].dst = tx.StmtContext(ctx, *src[i].dst)
	}
	return bound
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
		return fmt.Errorf("unindex %d: %w", okey, err)
	}
	return nil
}

// flushIndex writes the queued index rows with one statement.
func (tx *writeTxn) flushIndex(ctx context.Context) error {
	if len(tx.toIndex) == 0 {
		return nil
	}
	// FTS5 flushes its pending data whenever a rowid is not greater than the previous one, so the
	// rows go in ascending rowid (-okey) order.
	okeys := slices.Sorted(maps.Keys(tx.toIndex))
	rows := make([][3]any, 0, len(okeys))
	for _, okey := range slices.Backward(okeys) {
		r := tx.toIndex[okey]
		rows = append(rows, [3]any{okey, venueToken(r.venue), r.body})
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
func (tx *writeTxn) insertAll(ctx context.Context, msgs []*Message) (result error, added int64, err error) {
	var dups []string
	for _, m := range msgs {
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
	err := tx.findRow.QueryRowContext(ctx, msgid).Scan(&r.seq, &r.okey, &r.venue, &r.replaces, &r.deletedAt, &r.revTimeMs, &r.revSeq)
	if errors.Is(err, sql.ErrNoRows) {
		return storedRow{}, nil
	}
	if err != nil {
		return storedRow{}, fmt.Errorf("find %s: %w", msgid, err)
	}
	r.found, r.isRevision = true, r.replaces != ""
	return r, nil
}

// insert stores one message; stored is false for a duplicate msgid.
func (tx *writeTxn) insert(ctx context.Context, m *Message) (stored bool, err error) {
	tags, err := encodeTags(m.Tags)
	if err != nil {
		return false, err
	}
	if m.ReplacesMsgID == "" {
		return tx.insertRoot1(ctx, m, tags)
	}
	return tx.insertEdit1(ctx, m, tags)
}

func (tx *writeTxn) insertRoot1(ctx context.Context, m *Message, tags string) (stored bool, err error) {
	timeMs := m.Time.UnixMilli()
	var seq, okey int64
	err = tx.insertRoot.QueryRowContext(ctx, m.MsgID, m.Venue, m.Command, m.Sender, m.SenderNick, m.SenderDID,
		m.Text, tags, timeMs, m.Origin, firstKeyOf(timeMs), firstKeyOf(timeMs+1)).Scan(&seq, &okey)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if okey >= firstKeyOf(timeMs+1) {
		return false, fmt.Errorf("more than %d messages in millisecond %d", 1<<tieBits, timeMs)
	}
	m.Seq = seq
	return true, tx.linkEarlyRevisions(ctx, m, seq, okey)
}

// linkEarlyRevisions indexes a root just stored, in the form of its newest revision when
// revisions arrived before it.
func (tx *writeTxn) linkEarlyRevisions(ctx context.Context, m *Message, seq, okey int64) error {
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
	if _, err := tx.setRevision.ExecContext(ctx, editID, editText, tag, editTimeMs, editSeq, seq); err != nil {
		return err
	}
	tx.index(okey, m.Venue, editText)
	return nil
}

func (tx *writeTxn) insertEdit1(ctx context.Context, m *Message, tags string) (stored bool, err error) {
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
	var seq int64
	err = tx.insertEdit.QueryRowContext(ctx, m.MsgID, m.Venue, m.Command, m.Sender, m.SenderNick, m.SenderDID,
		m.Text, tags, timeMs, rootID, m.Origin).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	m.Seq = seq
	switch {
	case !root.found || root.isRevision: // the root has not arrived; linkEarlyRevisions will link it
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
	if _, err := tx.setRevision.ExecContext(ctx, m.MsgID, m.Text, tags, timeMs, seq, root.seq); err != nil {
		return true, err
	}
	if err := tx.unindex(ctx, root.okey); err != nil {
		return true, err
	}
	tx.index(root.okey, root.venue, m.Text)
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
	if err := tx.unindex(ctx, row.okey); err != nil {
		return nil, fmt.Errorf("eventstore: %w", err)
	}
	return nil, nil
}
