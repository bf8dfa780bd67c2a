package eventstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"
)

// The event exchange between nodes reads a node's own rows in the order it stored them: that log
// is the node's durable outbox, and a peer catches up by asking for the rows after the last origin
// seq it stored (its cursor). No row is ever sent that was not durably stored first.

// OriginAfter returns up to limit raw rows (roots and edits, deleted or not) that origin
// originated, with seq > afterSeq, in seq order. Seq is this store's own sequence.
func (s *Store) OriginAfter(ctx context.Context, origin string, afterSeq int64, limit int) ([]Message, error) {
	out, err := s.originRows(ctx, "origin after", origin, afterSeq, math.MaxInt64, limit)
	if err != nil {
		return nil, err
	}
	if err := s.awaitDurable(); err != nil {
		return nil, err
	}
	return out, nil
}

// OriginThrough is OriginAfter for rows with afterSeq < seq <= through, for a caller that knows
// every row through `through` is durable (it was told of that row after its commit: durability
// follows the order of commits), so it does not wait for the write-ahead log's next sync.
func (s *Store) OriginThrough(ctx context.Context, origin string, afterSeq, through int64, limit int) ([]Message, error) {
	return s.originRows(ctx, "origin through", origin, afterSeq, through, limit)
}

func (s *Store) originRows(ctx context.Context, op, origin string, afterSeq, through int64, limit int) ([]Message, error) {
	if err := s.checkOpen(ctx); err != nil {
		return nil, err
	}
	limit, err := clampLimit(limit)
	if err != nil {
		return nil, err
	}
	rows, err := s.readDB.QueryContext(ctx, `SELECT `+rawColumns+` FROM messages m
		WHERE m.origin = ? AND m.seq > ? AND m.seq <= ? ORDER BY m.seq LIMIT ?`, origin, afterSeq, through, limit)
	if err != nil {
		return nil, s.wrapReadErr(op, err)
	}
	out, err := scanMessages(rows, min(limit, 256))
	if err != nil {
		return nil, s.wrapReadErr(op, err)
	}
	return out, nil
}

// sqlOriginSeqs lists the seqs of origin's rows in a range: a walk of the covering index
// messages_by_origin that reads no row.
const sqlOriginSeqs = `SELECT seq FROM messages WHERE origin = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?`

// OriginSeqs returns the seqs of the rows OriginThrough would return, without reading the rows:
// a caller that holds the rows it published (the exchange's streams) proves with it that it has
// every row of the range. A range of rows committed since Open is answered from memory
// (recentseqs.go), an older one by a walk of the index.
func (s *Store) OriginSeqs(ctx context.Context, origin string, afterSeq, through int64, limit int) ([]int64, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	limit, err := clampLimit(limit)
	if err != nil {
		return nil, err
	}
	// From memory, the seqs the intake log acknowledged count, applied or not: they are durable.
	if seqs, ok := s.seqs.between(origin, afterSeq, through, limit); ok {
		return seqs, nil
	}
	if err := s.waitApplied(ctx); err != nil {
		return nil, err
	}
	rows, err := s.readDB.QueryContext(ctx, sqlOriginSeqs, origin, afterSeq, through, limit)
	if err != nil {
		return nil, s.wrapReadErr("origin seqs", err)
	}
	defer rows.Close()
	out := make([]int64, 0, min(limit, 256))
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			return nil, s.wrapReadErr("origin seqs", err)
		}
		out = append(out, seq)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrapReadErr("origin seqs", err)
	}
	return out, nil
}

// Cursor returns the last origin seq stored from origin (0 when nothing was).
func (s *Store) Cursor(ctx context.Context, origin string) (int64, error) {
	if err := s.checkOpenNoWait(ctx); err != nil {
		return 0, err
	}
	var seq int64
	err := s.readDB.QueryRowContext(ctx, `SELECT seq FROM peer_cursors WHERE origin = ?`, origin).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, s.wrapReadErr("cursor "+origin, err)
	}
	return seq, nil
}

// SetCursor durably records that every row of origin up to seq is stored here. A cursor never
// moves backwards.
func (s *Store) SetCursor(ctx context.Context, origin string, seq int64) error {
	if err := s.checkOpenNoWait(ctx); err != nil {
		return err
	}
	committed := s.committing()
	_, err := s.writeDB.ExecContext(ctx, `INSERT INTO peer_cursors(origin, seq) VALUES (?, ?)
		ON CONFLICT(origin) DO UPDATE SET seq = excluded.seq WHERE excluded.seq > peer_cursors.seq`, origin, seq)
	committed()
	if err != nil {
		return fmt.Errorf("eventstore: set cursor %s: %w", origin, err)
	}
	return s.syncCommitted()
}

// Deletion is a delete made on some node, in that node's order.
type Deletion struct {
	Seq       int64
	RootMsgID string
	At        time.Time
	Origin    string
	Venue     string
	Deleter
}

// DeletionsAfter returns up to limit deletes made on origin with seq > afterSeq, in order.
func (s *Store) DeletionsAfter(ctx context.Context, origin string, afterSeq int64, limit int) ([]Deletion, error) {
	if err := s.checkOpen(ctx); err != nil {
		return nil, err
	}
	limit, err := clampLimit(limit)
	if err != nil {
		return nil, err
	}
	rows, err := s.readDB.QueryContext(ctx, `SELECT seq, root_msgid, at_ms, origin, venue, sender, sender_did, tags_json
		FROM deletions WHERE origin = ? AND seq > ? ORDER BY seq LIMIT ?`, origin, afterSeq, limit)
	if err != nil {
		return nil, s.wrapReadErr("deletions after", err)
	}
	defer rows.Close()
	var out []Deletion
	for rows.Next() {
		var d Deletion
		var atMs int64
		var tags string
		if err := rows.Scan(&d.Seq, &d.RootMsgID, &atMs, &d.Origin, &d.Venue, &d.Sender, &d.SenderDID, &tags); err != nil {
			return nil, s.wrapReadErr("deletions after", err)
		}
		if d.Tags, err = decodeTags(tags); err != nil {
			return nil, fmt.Errorf("eventstore: deletion %d: %w", d.Seq, err)
		}
		d.At = time.UnixMilli(atMs).UTC()
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrapReadErr("deletions after", err)
	}
	if err := s.awaitDurable(); err != nil {
		return nil, err
	}
	return out, nil
}
