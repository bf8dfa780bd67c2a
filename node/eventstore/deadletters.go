package eventstore

import (
	"context"
	"fmt"
	"time"
)

// Dead letters: an item a peer sent that this node cannot accept (too large, undecodable, refused
// by an acceptance rule) is recorded here, once, with the reason, and the cursor over the peer's
// log moves past it: one such item never stops the items after it. The table only grows by what
// peers send wrongly; it is read by the operator's tools (the health answer, diagnose_sync).

// DeadLetter is one item this node refused from a peer.
type DeadLetter struct {
	Peer   string // the peer that sent it: a node or a server DID
	Origin string // the node or server that made it
	Log    string // the origin's log it came from: messages, deletes or reactions
	Seq    int64  // its seq in that log (0 when unknown)
	MsgID  string // its msgid, when it has one
	Reason string // a short code: oversize, malformed, or the acceptance rule that refused it
	Detail string
	Time   time.Time
}

// AddDeadLetters durably records refused items; one recorded before (same peer, origin, log,
// seq and msgid) is not recorded again.
func (s *Store) AddDeadLetters(ctx context.Context, ds []DeadLetter) error {
	if len(ds) == 0 {
		return nil
	}
	if err := s.checkOpenNoWait(ctx); err != nil {
		return err
	}
	committed := s.committing()
	err := func() error {
		tx, err := s.writeDB.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		for _, d := range ds {
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO dead_letters(peer, origin, log, seq, msgid, reason, detail, time_ms)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, d.Peer, d.Origin, d.Log, d.Seq, d.MsgID, d.Reason, d.Detail, d.Time.UnixMilli()); err != nil {
				return err
			}
		}
		return tx.Commit()
	}()
	committed()
	if err != nil {
		return fmt.Errorf("eventstore: add dead letters: %w", err)
	}
	return s.syncCommitted()
}

// DeadLetters returns the last limit dead letters from peer (every peer when empty), newest
// first.
func (s *Store) DeadLetters(ctx context.Context, peer string, limit int) ([]DeadLetter, error) {
	if err := s.checkOpen(ctx); err != nil {
		return nil, err
	}
	limit, err := clampLimit(limit)
	if err != nil {
		return nil, err
	}
	rows, err := s.readDB.QueryContext(ctx, `SELECT peer, origin, log, seq, msgid, reason, detail, time_ms FROM dead_letters
		WHERE ? = '' OR peer = ? ORDER BY id DESC LIMIT ?`, peer, peer, limit)
	if err != nil {
		return nil, s.wrapReadErr("dead letters", err)
	}
	defer rows.Close()
	var out []DeadLetter
	for rows.Next() {
		var d DeadLetter
		var ms int64
		if err := rows.Scan(&d.Peer, &d.Origin, &d.Log, &d.Seq, &d.MsgID, &d.Reason, &d.Detail, &ms); err != nil {
			return nil, s.wrapReadErr("dead letters", err)
		}
		d.Time = time.UnixMilli(ms).UTC()
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrapReadErr("dead letters", err)
	}
	return out, nil
}

// DeadLetterCounts returns the number of dead letters recorded from each peer.
func (s *Store) DeadLetterCounts(ctx context.Context) (map[string]int64, error) {
	if err := s.checkOpen(ctx); err != nil {
		return nil, err
	}
	rows, err := s.readDB.QueryContext(ctx, `SELECT peer, COUNT(*) FROM dead_letters GROUP BY peer`)
	if err != nil {
		return nil, s.wrapReadErr("dead letter counts", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var peer string
		var n int64
		if err := rows.Scan(&peer, &n); err != nil {
			return nil, s.wrapReadErr("dead letter counts", err)
		}
		out[peer] = n
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrapReadErr("dead letter counts", err)
	}
	return out, nil
}
