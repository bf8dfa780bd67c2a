package eventstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"
)

// The search index behind a watermark.
//
// A message is acknowledged once its row is durable; its search-index row follows in a later
// transaction of its own. search_index_state holds the watermark indexed_seq: every messages row
// whose seq is at or below it is reflected in messages_fts (its root indexed with the root's
// current text, unless deleted). An indexing transaction reads the rows above the watermark in
// seq order (at most indexChunk of them), (re)indexes the root each one is or revises with the
// root's current text, and moves the watermark, all in one transaction; so a crash leaves nothing
// unindexed: Open catches up from the watermark before the writer starts.
//
// A root is indexed when its own row is (with its current text, which may already be an edit's),
// and indexed again, replacing what the index holds for it, when an edit of it is read after
// the root itself went below the watermark. A delete removes the root from the index in the delete's own transaction: a root at or
// below the watermark is never read by the indexer again, and one above it is skipped when read
// (it is deleted by then).
//
// Why: the index used to be written in every group commit, and an FTS5 segment per commit
// (tokenizing, writing the segment's pages, merging segments) was a third of the writer's CPU per
// message (B11). Indexing hundreds of rows at once makes one segment of them, and the indexing
// transaction needs no fsync before anyone is answered: a crash loses at most index rows, which
// Open rebuilds. The writer goroutine runs it between batches (SQLite has one writer), when the
// oldest unindexed commit has waited indexIdleDelay and no request is queued, or indexBusyDelay
// whatever is queued, or when indexChunk rows are waiting. The contract allows the index to lag
// by up to a second (B13); Search still sees every message committed before it was called, since
// it asks the writer to catch up first (awaitIndexed) when the index is behind.
const (
	indexChunk     = 512
	indexSyncChunk = 128
	indexIdleDelay = 5 * time.Millisecond
	indexBusyDelay = 100 * time.Millisecond
)

const (
	sqlIndexedSeq    = `SELECT indexed_seq FROM search_index_state`
	sqlSetIndexedSeq = `UPDATE search_index_state SET indexed_seq = ?`
	// sqlRootsToIndex takes the watermark and the seq up to which to index: the live roots stored
	// in between, each with its current text, newest first (the order FTS5 takes them in). None
	// is in the index yet: an edit indexes its root only once the root is at or below the
	// watermark (sqlRevisedToIndex).
	sqlRootsToIndex = `SELECT m.okey, m.venue, COALESCE(m.rev_text, m.text) FROM messages m
		WHERE m.seq > ?1 AND m.seq <= ?2 AND m.replaces_msgid IS NULL AND m.deleted_at_ms IS NULL`
	// sqlRevisedToIndex takes the watermark and the seq up to which to index: the live roots at
	// or below the watermark that the edits stored in between revise, with their current text.
	sqlRevisedToIndex = `SELECT r.okey, r.venue, COALESCE(r.rev_text, r.text) FROM messages e
		JOIN messages r ON r.msgid = e.replaces_msgid
		WHERE e.seq > ?1 AND e.seq <= ?2 AND e.replaces_msgid IS NOT NULL AND r.replaces_msgid IS NULL
		AND r.deleted_at_ms IS NULL AND r.seq <= ?1`
	sqlMaxSeq = `SELECT COALESCE(MAX(seq), 0) FROM messages`
)

// searchIndex is the watermark's state as the writer keeps it.
type searchIndex struct {
	// indexed is the committed watermark, committed the greatest seq the writer committed.
	indexed, committed atomic.Int64
	// behindSince is when the oldest commit not yet indexed was made; writer goroutine only.
	behindSince time.Time
}

func (ix *searchIndex) behind() bool { return ix.indexed.Load() < ix.committed.Load() }

// noteCommitted records a commit of the writer whose greatest seq is seq.
func (ix *searchIndex) noteCommitted(seq int64, at time.Time) {
	if seq <= ix.committed.Load() {
		return
	}
	if !ix.behind() {
		ix.behindSince = at
	}
	ix.committed.Store(seq)
}

// due reports whether the writer should index now; idle is whether no request is queued.
func (ix *searchIndex) due(now time.Time, idle bool) bool {
	if !ix.behind() {
		return false
	}
	waited := now.Sub(ix.behindSince)
	return waited >= indexBusyDelay || (idle && waited >= indexIdleDelay) ||
		ix.committed.Load()-ix.indexed.Load() >= indexChunk
}

// idleWait is how long an idle writer waits before indexing.
func (ix *searchIndex) idleWait(now time.Time) time.Duration {
	return indexIdleDelay - now.Sub(ix.behindSince)
}

// indexStep indexes the rows above the watermark, up to limit of them, in one transaction. Only
// the writer goroutine (and Open, before it starts) calls it.
func (s *Store) indexStep(ctx context.Context, limit int64) error {
	lo := s.index.indexed.Load()
	hi := min(s.index.committed.Load(), lo+limit)
	if hi <= lo {
		return nil
	}
	tx, err := s.writeDB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("eventstore: index: begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit this is a no-op
	// New roots go in with a plain insert; revised ones replace what the index holds for them.
	if err := indexRows(ctx, tx.StmtContext(ctx, s.w.rootsToIndex), tx.StmtContext(ctx, s.w.ftsInsertMany), lo, hi); err != nil {
		return err
	}
	if err := indexRows(ctx, tx.StmtContext(ctx, s.w.revisedToIndex), tx.StmtContext(ctx, s.w.ftsReplaceMany), lo, hi); err != nil {
		return err
	}
	if _, err := tx.StmtContext(ctx, s.w.setIndexedSeq).ExecContext(ctx, hi); err != nil {
		return fmt.Errorf("eventstore: move the search index's watermark: %w", err)
	}
	committed := s.committing()
	err = tx.Commit()
	committed()
	if err != nil {
		return fmt.Errorf("eventstore: index: commit: %w", err)
	}
	s.index.indexed.Store(hi)
	// No generation bump (generation.go): Search catches the index up to every commit before it
	// reads, so its answers change with the commits, which bumped it.
	s.index.behindSince = time.Now()
	return nil
}

// indexRows indexes the roots that query finds between the watermark lo and hi with insert.
func indexRows(ctx context.Context, query, insert *sql.Stmt, lo, hi int64) error {
	rows, err := query.QueryContext(ctx, lo, hi)
	if err != nil {
		return fmt.Errorf("eventstore: index rows %d..%d: %w", lo+1, hi, err)
	}
	byOkey := make(map[int64][2]string)
	for rows.Next() {
		var okey int64
		var venue, body string
		if err := rows.Scan(&okey, &venue, &body); err != nil {
			rows.Close()
			return fmt.Errorf("eventstore: index rows %d..%d: %w", lo+1, hi, err)
		}
		byOkey[okey] = [2]string{venueToken(venue), body}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("eventstore: index rows %d..%d: %w", lo+1, hi, err)
	}
	if len(byOkey) == 0 {
		return nil
	}
	// FTS5 flushes its pending data whenever a rowid is not greater than the previous one, so the
	// rows go in ascending rowid (-okey) order: newest (time, seq) first.
	okeys := slices.SortedFunc(maps.Keys(byOkey), func(a, b int64) int { return cmp.Compare(b, a) })
	doc := make([][3]any, 0, len(okeys))
	for _, okey := range okeys {
		r := byOkey[okey]
		doc = append(doc, [3]any{okey, r[0], r[1]})
	}
	encoded, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("eventstore: encode index rows: %w", err)
	}
	if _, err := insert.ExecContext(ctx, string(encoded)); err != nil {
		return fmt.Errorf("eventstore: index %d messages: %w", len(doc), err)
	}
	return nil
}

// indexAll indexes every committed row.
func (s *Store) indexAll(ctx context.Context) error {
	for s.index.behind() {
		if err := s.indexStep(ctx, indexChunk); err != nil {
			return err
		}
	}
	return nil
}

// indexIfDue runs one indexing step when it is due, logging a failure (the rows stay above the
// watermark and are tried again).
func (s *Store) indexIfDue(idle bool) {
	if !s.index.due(time.Now(), idle) {
		return
	}
	s.indexLogged(indexChunk)
}

// indexWhileSyncing runs one small indexing step while the writer waits for the syncer to take
// its batch (the syncer's fsync of the previous one): time in which the writer would otherwise
// do nothing. It reports whether it indexed.
func (s *Store) indexWhileSyncing() bool {
	if !s.index.behind() {
		return false
	}
	s.indexLogged(indexSyncChunk)
	return true
}

// indexLogged runs one indexing step of up to limit rows, logging a failure.
func (s *Store) indexLogged(limit int64) {
	if err := s.indexStep(context.Background(), limit); err != nil {
		s.log.Error("search indexing failed", "err", err)
		s.index.behindSince = time.Now() // try again after the delay, not at once
	}
}

// awaitIndexed returns once every message committed before the call is in the search index.
func (s *Store) awaitIndexed(ctx context.Context) error {
	if !s.index.behind() {
		return nil
	}
	return s.submit(ctx, &writeRequest{ctx: ctx, catchUp: true, done: make(chan error, 1)})
}

// openSearchIndex reads the watermark and indexes what lies above it (rows a crash left
// unindexed). Open calls it before the writer starts.
func (s *Store) openSearchIndex(ctx context.Context) error {
	var indexed, maxSeq int64
	if err := s.writeDB.QueryRowContext(ctx, sqlIndexedSeq).Scan(&indexed); err != nil {
		return fmt.Errorf("eventstore: read the search index's watermark: %w", err)
	}
	if err := s.writeDB.QueryRowContext(ctx, sqlMaxSeq).Scan(&maxSeq); err != nil {
		return fmt.Errorf("eventstore: read the greatest seq: %w", err)
	}
	s.index.indexed.Store(indexed)
	s.index.committed.Store(max(indexed, maxSeq))
	if indexed < maxSeq {
		s.log.Info("indexing messages stored after the search index's watermark", "from", indexed+1, "to", maxSeq)
	}
	return s.indexAll(ctx)
}
