package eventstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// writeStatements are prepared once on the writer's single connection and bound to each batch's
// transaction with Tx.StmtContext (which reuses the connection's prepared statement).
type writeStatements struct {
	insertRoot  *sql.Stmt // returns seq and okey, or no row when the msgid is already stored
	insertEdit  *sql.Stmt // returns seq, or no row when the msgid is already stored
	findRow     *sql.Stmt // by msgid: seq, okey, venue, replaces_msgid, deleted_at_ms, rev_time_ms, rev_seq
	latestEdit  *sql.Stmt // the newest edit of a root msgid
	setRevision *sql.Stmt // a root's current revision
	markDeleted *sql.Stmt // one row
	deleteAll   *sql.Stmt // a root and all its revisions
	ftsInsert   *sql.Stmt
	ftsDelete   *sql.Stmt
}

func (w *writeStatements) prepare(ctx context.Context, db *sql.DB) error {
	return prepareAll(ctx, db, []namedStatement{
		// The okey of a new root is the next free one of its millisecond: bind ?12 to
		// firstKeyOf(time_ms) and ?13 to firstKeyOf(time_ms+1).
		{&w.insertRoot, `INSERT INTO messages(msgid, venue, command, sender, sender_nick, sender_did, text,
			tags_json, time_ms, replaces_msgid, origin, okey) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,
			(SELECT COALESCE(MAX(okey) + 1, ?12) FROM messages WHERE okey >= ?12 AND okey < ?13))
			ON CONFLICT(msgid) DO NOTHING RETURNING seq, okey`},
		{&w.insertEdit, `INSERT INTO messages(msgid, venue, command, sender, sender_nick, sender_did, text,
			tags_json, time_ms, replaces_msgid, origin) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT(msgid) DO NOTHING RETURNING seq`},
		{&w.findRow, `SELECT seq, COALESCE(okey, 0), venue, replaces_msgid, deleted_at_ms, rev_time_ms, rev_seq
			FROM messages WHERE msgid = ?`},
		{&w.latestEdit, `SELECT seq, msgid, text, tags_json, time_ms FROM messages
			WHERE replaces_msgid = ? ORDER BY time_ms DESC, seq DESC LIMIT 1`},
		{&w.setRevision, `UPDATE messages SET rev_msgid = ?, rev_text = ?, rev_tags_json = ?,
			rev_time_ms = ?, rev_seq = ? WHERE seq = ?`},
		{&w.markDeleted, `UPDATE messages SET deleted_at_ms = ? WHERE seq = ?`},
		{&w.deleteAll, `UPDATE messages SET deleted_at_ms = ?
			WHERE (seq = ? OR replaces_msgid = ?) AND deleted_at_ms IS NULL`},
		{&w.ftsInsert, `INSERT INTO messages_fts(rowid, venue, body) VALUES (?, ?, ?)`},
		{&w.ftsDelete, `DELETE FROM messages_fts WHERE rowid = ?`},
	})
}

func (w *writeStatements) close() error {
	return closeAll(w.insertRoot, w.insertEdit, w.findRow, w.latestEdit, w.setRevision, w.markDeleted, w.deleteAll,
		w.ftsInsert, w.ftsDelete)
}

// readStatements are prepared on the reader pool; database/sql re-prepares them lazily per
// connection.
type readStatements struct {
	has        *sql.Stmt
	raw        *sql.Stmt // a raw row by msgid
	current    *sql.Stmt // a live root in current form by seq
	position   *sql.Stmt // okey of the root of a msgid within a venue
	rangeAsc   *sql.Stmt // live roots of a venue strictly between two okeys, oldest first
	rangeDesc  *sql.Stmt // the same, newest first
	exportFrom *sql.Stmt // live roots of a venue after a seq, by seq
	search     *sql.Stmt
}

// The views' and search's queries; plan_test.go checks that they stay index walks without sorts.
const (
	rangeWhere = `FROM messages m WHERE m.venue = ? AND ` + liveRoot + ` AND m.okey > ? AND m.okey < ?`
	// sqlRangeAsc and sqlRangeDesc take venue, exclusive low okey, exclusive high okey, limit.
	sqlRangeAsc  = `SELECT ` + viewColumns + ` ` + rangeWhere + ` ORDER BY m.okey ASC LIMIT ?`
	sqlRangeDesc = `SELECT ` + viewColumns + ` ` + rangeWhere + ` ORDER BY m.okey DESC LIMIT ?`
	// sqlExport takes venue, seq, limit.
	sqlExport = `SELECT ` + viewColumns + ` FROM messages m
		WHERE m.venue = ? AND ` + liveRoot + ` AND m.seq > ? ORDER BY m.seq ASC LIMIT ?`
	// sqlSearch takes the MATCH expression, exclusive high okey, venue, limit. CROSS JOIN keeps
	// FTS5 as the outer loop: it yields matches newest first (rowid = okey) and LIMIT stops the
	// walk, however many messages match.
	sqlSearch = `SELECT ` + viewColumns + ` FROM messages_fts CROSS JOIN messages m ON m.okey = messages_fts.rowid
		WHERE messages_fts MATCH ? AND messages_fts.rowid < ? AND m.venue = ? AND ` + liveRoot + `
		ORDER BY messages_fts.rowid DESC LIMIT ?`
)

func (r *readStatements) prepare(ctx context.Context, db *sql.DB) error {
	return prepareAll(ctx, db, []namedStatement{
		{&r.has, `SELECT 1 FROM messages WHERE msgid = ?`},
		{&r.raw, `SELECT ` + rawColumns + ` FROM messages m WHERE m.msgid = ?`},
		{&r.current, `SELECT ` + viewColumns + ` FROM messages m WHERE m.seq = ? AND ` + liveRoot},
		{&r.position, `SELECT m.okey FROM messages e JOIN messages m
			ON m.msgid = IIF(e.replaces_msgid = '', e.msgid, e.replaces_msgid)
			WHERE e.msgid = ? AND m.venue = ? AND m.replaces_msgid = ''`},
		{&r.rangeAsc, sqlRangeAsc},
		{&r.rangeDesc, sqlRangeDesc},
		{&r.exportFrom, sqlExport},
		{&r.search, sqlSearch},
	})
}

func (r *readStatements) close() error {
	return closeAll(r.has, r.raw, r.current, r.position, r.rangeAsc, r.rangeDesc, r.exportFrom, r.search)
}

type namedStatement struct {
	dst   **sql.Stmt
	query string
}

func prepareAll(ctx context.Context, db *sql.DB, stmts []namedStatement) error {
	for _, ns := range stmts {
		st, err := db.PrepareContext(ctx, ns.query)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", firstLine(ns.query), err)
		}
		*ns.dst = st
	}
	return nil
}

func closeAll(stmts ...*sql.Stmt) error {
	var errs []error
	for _, st := range stmts {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}
