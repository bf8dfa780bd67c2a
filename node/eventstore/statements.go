package eventstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// The store's SQL. plan_test.go checks that none of it scans the messages table or sorts: each
// query is an index lookup or an index walk in the order it returns. Roots store NULL, not an
// empty string, in replaces_msgid: "replaces_msgid = ?" then implies the edits index's "IS NOT
// NULL" without looking at the bound value, which would make SQLite re-prepare the statement at
// every call.
const (
	// sqlInsertRoot gives a new root the next free okey of its millisecond: bind ?11 to
	// firstKeyOf(time_ms) and ?12 to firstKeyOf(time_ms+1). A full millisecond violates the
	// table's CHECK. Nothing changes (and no row returns) when the msgid is stored. The writer
	// uses it only for a root older than the newest stored millisecond; newer roots go in runs
	// (sqlInsertRoots, roots.go).
	sqlInsertRoot = `INSERT INTO messages(msgid, venue, command, sender, sender_nick, sender_did, text,
		tags_json, time_ms, replaces_msgid, origin, okey, incarnation, public, resume_from, seq) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, NULL, ?10,
		(SELECT COALESCE(MAX(okey) + 1, ?11) FROM messages WHERE okey >= ?11 AND okey < ?12), ?13, ?14, ?15, ?16)
		ON CONFLICT(msgid) DO NOTHING RETURNING seq, okey`
	// sqlSeqByOkey finds a root the writer stored under an okey it chose (roots.go).
	sqlSeqByOkey = `SELECT seq FROM messages WHERE okey = ?`
	// sqlMaxOkey is the greatest okey stored (math.MinInt64 when none): one step down the okey
	// index, at Open.
	sqlMaxOkey    = `SELECT COALESCE(MAX(okey), ?) FROM messages`
	sqlInsertEdit = `INSERT INTO messages(msgid, venue, command, sender, sender_nick, sender_did, text,
		tags_json, time_ms, replaces_msgid, origin, incarnation, public, resume_from, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(msgid) DO NOTHING`
	sqlCountEdits = `SELECT COUNT(*) FROM messages WHERE replaces_msgid = ?`
	// sqlCountOrphanEdits counts the edits whose root is not stored. It runs once, at Open.
	sqlCountOrphanEdits = `SELECT COUNT(*) FROM messages e WHERE e.replaces_msgid IS NOT NULL
		AND NOT EXISTS (SELECT 1 FROM messages r WHERE r.msgid = e.replaces_msgid)`
	sqlFindRow = `SELECT seq, COALESCE(okey, 0), time_ms, venue, COALESCE(replaces_msgid, ''), deleted_at_ms, rev_time_ms, rev_seq
		FROM messages WHERE msgid = ?`
	sqlLatestEdit = `SELECT seq, msgid, text, tags_json, time_ms FROM messages
		WHERE replaces_msgid = ? ORDER BY time_ms DESC, seq DESC LIMIT 1`
	sqlSetRevision = `UPDATE messages SET rev_msgid = ?, rev_text = ?, rev_tags_json = ?,
		rev_time_ms = ?, rev_seq = ? WHERE seq = ?`
	sqlMarkDeleted       = `UPDATE messages SET deleted_at_ms = ? WHERE seq = ?`
	sqlDeleteRevisionsOf = `UPDATE messages SET deleted_at_ms = ?1
		WHERE replaces_msgid = ?2 AND deleted_at_ms IS NULL`
	sqlFTSDelete = `DELETE FROM messages_fts WHERE rowid = -?` // takes okey
	// sqlRecordDeletion files a delete made on this node in the deletions log, which the event
	// exchange copies to the other nodes.
	// sqlReactions takes a JSON array of root msgids: one statement, prepared once, whatever the
	// page size. It returns one row per reaction (in primary-key order, no sort); the caller counts.
	sqlReactions = `SELECT root_msgid, emoji FROM reactions
		WHERE root_msgid IN (SELECT value FROM json_each(?))`
	sqlRecordDeletion = `INSERT INTO deletions(root_msgid, at_ms, origin, venue, sender, sender_did, tags_json)
		SELECT ?1, ?2, ?3, m.venue, ?4, ?5, ?6 FROM messages m WHERE m.msgid = ?1`

	sqlHas      = `SELECT 1 FROM messages WHERE msgid = ?`
	sqlRaw      = `SELECT ` + rawColumns + ` FROM messages m WHERE m.msgid = ?`
	sqlCurrent  = `SELECT ` + viewColumns + ` FROM messages m WHERE m.seq = ? AND ` + liveRoot
	sqlPosition = `SELECT m.okey FROM messages e JOIN messages m
		ON m.msgid = COALESCE(e.replaces_msgid, e.msgid)
		WHERE e.msgid = ? AND m.venue = ? AND m.replaces_msgid IS NULL`
	// scope45 and scope56 are the history rule of a channel venue (see "Channel incarnations" in
	// doc.go) on parameters 4 and 5, or 5 and 6: the first is 1 to let every row through (a DM
	// venue, or a store without Scope), the second the channel's current incarnation. A row passes
	// when it was public when written or belongs to that incarnation. A channel that does not
	// exist binds an incarnation no row holds (noIncarnation).
	scope45 = `(?4 OR m.public OR m.incarnation = ?5)`
	scope56 = `(?5 OR m.public OR m.incarnation = ?6)`
	// kept7 and kept6 let the TAGMSGs kept in history (tagmsgs.go) through when parameter 7 or
	// 6 is 1, and leave them out (the message views) when it is 0.
	kept7      = `(?7 OR m.command <> 'TAGMSG')`
	kept6      = `(?6 OR m.command <> 'TAGMSG')`
	rangeWhere = `FROM messages m WHERE m.venue = ?1 AND ` + liveRoot + ` AND m.okey > ?2 AND m.okey < ?3 AND ` +
		scope56 + ` AND ` + kept7
	// sqlRangeAsc and sqlRangeDesc take venue, exclusive low okey, exclusive high okey, limit,
	// the scope (see scopeCond) and whether kept TAGMSGs are read.
	sqlRangeAsc  = `SELECT ` + viewColumns + ` ` + rangeWhere + ` ORDER BY m.okey ASC LIMIT ?4`
	sqlRangeDesc = `SELECT ` + viewColumns + ` ` + rangeWhere + ` ORDER BY m.okey DESC LIMIT ?4`
	// sqlExport takes venue, seq, limit, the scope and whether kept TAGMSGs are read.
	sqlExport = `SELECT ` + viewColumns + ` FROM messages m
		WHERE m.venue = ?1 AND ` + liveRoot + ` AND m.seq > ?2 AND ` + scope45 + ` AND ` + kept6 + ` ORDER BY m.seq ASC LIMIT ?3`
	// sqlSearch takes the MATCH expression, exclusive high okey, venue, limit and the scope. The search index's
	// rowid is -okey, so ascending rowid is newest first: FTS5 walks its doclists forwards, where
	// it can skip through them with their indexes (walking backwards reads every page of a
	// doclist). CROSS JOIN keeps FTS5 the outer loop and LIMIT stops the walk, however many
	// messages match.
	sqlSearch = `SELECT ` + viewColumns + ` FROM messages_fts CROSS JOIN messages m ON m.okey = -messages_fts.rowid
		WHERE messages_fts MATCH ?1 AND messages_fts.rowid > -?2 AND m.venue = ?3 AND ` + liveRoot + ` AND ` + scope56 + `
		AND m.command <> 'TAGMSG' ORDER BY messages_fts.rowid ASC LIMIT ?4`
	// sqlSearchWalk takes the MATCH expression, exclusive high okey, limit: the newest matches of
	// every venue, each with its okey first, for Search to pick a venue's from (see search.go).
	sqlSearchWalk = `SELECT m.okey, ` + viewColumns + ` FROM messages_fts CROSS JOIN messages m ON m.okey = -messages_fts.rowid
		WHERE messages_fts MATCH ?1 AND messages_fts.rowid > -?2 AND ` + liveRoot + ` AND m.command <> 'TAGMSG'
		ORDER BY messages_fts.rowid ASC LIMIT ?3`
)

// writeStatements are prepared once on the writer's single connection and bound to each batch's
// transaction with Tx.StmtContext (which reuses the connection's prepared statement).
type writeStatements struct {
	insertRoot, insertEdit, findRow, latestEdit, countEdits, setRevision *sql.Stmt
	markDeleted, deleteRevisionsOf, ftsDelete                            *sql.Stmt
	recordDeletion, seqByOkey                                            *sql.Stmt
}

func (w *writeStatements) all() []namedStatement {
	return []namedStatement{
		{&w.insertRoot, sqlInsertRoot}, {&w.insertEdit, sqlInsertEdit}, {&w.findRow, sqlFindRow},
		{&w.latestEdit, sqlLatestEdit}, {&w.countEdits, sqlCountEdits}, {&w.setRevision, sqlSetRevision}, {&w.markDeleted, sqlMarkDeleted},
		{&w.deleteRevisionsOf, sqlDeleteRevisionsOf}, {&w.ftsDelete, sqlFTSDelete},
		{&w.recordDeletion, sqlRecordDeletion}, {&w.seqByOkey, sqlSeqByOkey},
	}
}

// rootChunkStatements are the multi-row root inserts, for 1, 2, 4, ..., maxRootChunk rows
// (roots.go). A transaction binds them only when it uses them.
type rootChunkStatements [rootChunkSizes]*sql.Stmt

func (c *rootChunkStatements) all() []namedStatement { return chunkStatements(c[:], sqlInsertRoots) }

// chunkStatements names a family of multi-row statements: stmts[level] runs sqlFor(1 << level).
func chunkStatements(stmts []*sql.Stmt, sqlFor func(rows int) string) []namedStatement {
	named := make([]namedStatement, len(stmts))
	for level := range stmts {
		named[level] = namedStatement{&stmts[level], sqlFor(1 << level)}
	}
	return named
}

// readStatements are prepared on the reader pool; database/sql re-prepares them lazily per
// connection.
type readStatements struct {
	has, raw, current, position, rangeAsc, rangeDesc, exportFrom, search *sql.Stmt
	searchWalk, reactions                                                *sql.Stmt
}

func (r *readStatements) all() []namedStatement {
	return []namedStatement{
		{&r.has, sqlHas}, {&r.raw, sqlRaw}, {&r.current, sqlCurrent}, {&r.position, sqlPosition},
		{&r.rangeAsc, sqlRangeAsc}, {&r.rangeDesc, sqlRangeDesc}, {&r.exportFrom, sqlExport}, {&r.search, sqlSearch},
		{&r.searchWalk, sqlSearchWalk}, {&r.reactions, sqlReactions},
	}
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

func closeAll(stmts []namedStatement) error {
	var errs []error
	for _, ns := range stmts {
		if *ns.dst != nil {
			errs = append(errs, (*ns.dst).Close())
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
