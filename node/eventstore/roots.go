package eventstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/bits"
	"strings"
)

// Runs of new roots: the writer's common case, stored with few statements.
//
// Almost every root a node stores is stamped with a clock reading of the last moments, so its
// millisecond is a recent one or a later one. For such a root the next free okey is known without
// asking the database: the writer keeps the greatest okey stored in each recent millisecond
// (recentkeys.go; every insert into messages goes through it, and a rolled back transaction's
// keys are dropped with it). So the writer gives the root its okey itself and queues it; consecutive queued roots (across the requests of a batch) go in with one
// multi-row INSERT ... RETURNING per chunk of 1, 2, 4, ..., maxRootChunk rows. Per message that
// saves the statement's start and halt, the okey sub-select, the sqlite_sequence update, and
// most of database/sql's per-call work (about a third of the writer's CPU per message before).
//
// Each row is stored under the seq the intake log gave it (admit.go), so the run is flushed before
// anything else touches the messages table (an edit, a delete, a root older than the recent
// milliseconds, the end of the batch) only to keep okeys in order. A msgid already stored (or
// repeated in the run; the intake log lets neither through, but a failed batch's requests are
// applied again one by one) is skipped by ON CONFLICT DO NOTHING; its okey stays unused, a gap
// that no order depends on. When a statement stored every row, each has its seq; otherwise the
// writer looks each queued root up by the okey it gave it. (RETURNING would name the rows too,
// at about 1.5 µs a row for the rows it hands back through database/sql.)

// rootChunkSizes is how many multi-row statements there are: for 1 to maxRootChunk rows.
const (
	rootChunkSizes = 8
	maxRootChunk   = 1 << (rootChunkSizes - 1)
	rootColumns    = 15 // parameters per row of sqlInsertRoots
)

// sqlInsertRoots inserts rows roots given their okeys (see roots.go).
func sqlInsertRoots(rows int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO messages(msgid, venue, command, sender, sender_nick, sender_did, text,
		tags_json, time_ms, origin, okey, incarnation, public, resume_from, seq) VALUES `)
	for i := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
	}
	b.WriteString(` ON CONFLICT(msgid) DO NOTHING`)
	return b.String()
}

// newRootKey is the okey a root of timeMs gets without asking the database, and whether there is
// one: false for a root older than the recent milliseconds, or in a full millisecond (the
// single-row insert then finds the key, or reports the full millisecond).
func (tx *writeTxn) newRootKey(timeMs int64) (int64, bool) {
	if timeMs < tx.recent.floor {
		return 0, false
	}
	key := firstKeyOf(timeMs)
	if top, ok := tx.topKey(timeMs); ok {
		key = max(key, top+1)
	}
	if key >= firstKeyOf(timeMs+1) {
		return 0, false
	}
	return key, true
}

// queueRoot gives m its okey and queues it for the next flushRoots.
func (tx *writeTxn) queueRoot(m *pendingMessage, okey int64) {
	m.okey = okey
	tx.noteKey(okey)
	tx.run = append(tx.run, m)
}

// flushRoots stores the queued roots in queue order, then links each stored one to its early
// revisions and queues its search-index row.
func (tx *writeTxn) flushRoots(ctx context.Context) error {
	if len(tx.run) == 0 {
		return nil
	}
	run := tx.run
	for len(run) > 0 {
		level := min(bits.Len(uint(len(run)))-1, rootChunkSizes-1)
		n := 1 << level
		if err := tx.insertRootChunk(ctx, level, run[:n]); err != nil {
			return err
		}
		run = run[n:]
	}
	for _, m := range tx.run {
		if m.seq == 0 {
			continue
		}
		if err := tx.linkEarlyRevisions(ctx, &m.Message, m.seq, m.okey); err != nil {
			return fmt.Errorf("eventstore: store %s: %w", m.MsgID, err)
		}
	}
	clear(tx.run)
	tx.run = tx.run[:0]
	return nil
}

// insertRootChunk inserts 1<<level queued roots with one statement and sets the seq of each one
// stored.
func (tx *writeTxn) insertRootChunk(ctx context.Context, level int, chunk []*pendingMessage) error {
	args := tx.args[:0]
	for _, m := range chunk {
		args = append(args, m.MsgID, m.Venue, m.Command, m.Sender, m.SenderNick, m.SenderDID,
			m.Text, m.tagsJSON, m.Time.UnixMilli(), m.Origin, m.okey, m.Incarnation, m.Public, resumeArg(m.ResumeFrom), m.jseq)
	}
	tx.args = args
	defer clear(args) // the strings are the callers'; do not keep them past the batch
	res, err := tx.rootChunk(ctx, level).ExecContext(ctx, args...)
	if err != nil {
		return fmt.Errorf("eventstore: store %d roots from %s: %w", len(chunk), chunk[0].MsgID, err)
	}
	stored, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("eventstore: store %d roots from %s: %w", len(chunk), chunk[0].MsgID, err)
	}
	if stored == int64(len(chunk)) {
		for _, m := range chunk {
			m.seq = m.jseq
		}
		return nil
	}
	for _, m := range chunk {
		err := tx.seqByOkey.QueryRowContext(ctx, m.okey).Scan(&m.seq)
		if err != nil && !errors.Is(err, sql.ErrNoRows) { // no row: a duplicate, its seq stays 0
			return fmt.Errorf("eventstore: look up the root stored as %s: %w", m.MsgID, err)
		}
	}
	return nil
}

// rootChunk is the multi-row statement for 1<<level rows, bound to the transaction on first use.
func (tx *writeTxn) rootChunk(ctx context.Context, level int) *sql.Stmt {
	if tx.chunks[level] == nil {
		tx.chunks[level] = tx.sqlTx.StmtContext(ctx, tx.chunkSrc[level])
	}
	return tx.chunks[level]
}
