package eventstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The reaction log is how reactions travel between nodes, as deletes do in the deletions log:
// every react and unreact is filed, with the TAGMSG it came as, in the same transaction as the
// reactions table change. A node serves the events made on it (ReactionLogAfter, in its own seq
// order) and files the ones it copies from other nodes too, so that a repeat is recognised by its
// event msgid and that the newest event of a (root, reactor, emoji) decides, whatever order the
// events arrive in: a react made on one node and the unreact made later on another converge to
// "no reaction" everywhere.

// ReactionEvent is a react or unreact, as filed in the reaction log.
type ReactionEvent struct {
	Seq         int64  // this store's sequence (set by ReactionLogAfter)
	EventID     string // the TAGMSG's msgid
	Origin      string // the node the event was made on
	Root        string // the root message reacted to
	Reactor     string // a DID, or "nick:<nick>" for a guest
	ReactorNick string
	Emoji       string
	Remove      bool // an unreact
	At          time.Time
	Venue       string // the root's venue
	// Sender, SenderDID and Tags render the TAGMSG as it was sent (the signature among the tags).
	Sender, SenderDID string
	Tags              map[string]string
}

func (r *ReactionEvent) validate() error {
	switch {
	case r.EventID == "" || r.Origin == "" || r.Root == "" || r.Reactor == "" || r.Venue == "":
		return fmt.Errorf("%w: a reaction event needs an event id, an origin, a root, a reactor and a venue", ErrInvalidArgument)
	case r.Emoji == "" || len(r.Emoji) > MaxEmojiBytes:
		return fmt.Errorf("%w: reaction emoji must be 1 to %d bytes", ErrInvalidArgument, MaxEmojiBytes)
	case r.At.IsZero():
		return fmt.Errorf("%w: reaction event %s without time", ErrInvalidArgument, r.EventID)
	}
	return validTime(r.At)
}

// FileReaction files a react or unreact in the reaction log and, when it is the newest event of
// its (root, reactor, emoji), applies it to the reactions table, in one transaction. applied
// reports that the reactions table now reflects this event: false for one superseded by a newer
// event of the same reaction. An event id already filed is ErrDuplicate (nothing changes). A root
// that is not stored (or not in r.Venue) is ErrNotFound: nothing is filed, and the event can be
// filed once the root has arrived.
func (s *Store) FileReaction(ctx context.Context, r ReactionEvent) (applied bool, err error) {
	if err := s.checkOpen(ctx); err != nil {
		return false, err
	}
	if err := r.validate(); err != nil {
		return false, err
	}
	tags, err := encodeTags(r.Tags)
	if err != nil {
		return false, fmt.Errorf("%w: reaction tags: %w", ErrInvalidArgument, err)
	}
	defer s.generation.Add(1) // committed or not: a reader's cached answer is stale either way
	tx, err := s.writeDB.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("eventstore: file reaction: begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit this is a no-op
	applied, err = fileReactionTx(ctx, tx, &r, tags)
	if err != nil {
		return false, err
	}
	committed := s.committing()
	err = tx.Commit()
	committed()
	if err != nil {
		return false, fmt.Errorf("eventstore: file reaction %s: commit: %w", r.EventID, err)
	}
	if err := s.syncCommitted(); err != nil {
		return false, err
	}
	return applied, nil
}

func fileReactionTx(ctx context.Context, tx *sql.Tx, r *ReactionEvent, tags string) (bool, error) {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM messages WHERE msgid = ? AND venue = ? AND replaces_msgid IS NULL`,
		r.Root, r.Venue).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("%w: root %s of reaction %s", ErrNotFound, r.Root, r.EventID)
	}
	if err != nil {
		return false, fmt.Errorf("eventstore: find root of reaction %s: %w", r.EventID, err)
	}
	atMs := r.At.UnixMilli()
	res, err := tx.ExecContext(ctx, `INSERT INTO reaction_log(event_msgid, origin, root_msgid, reactor, reactor_nick,
		emoji, removed, time_ms, venue, sender, sender_did, tags_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(event_msgid) DO NOTHING`, r.EventID, r.Origin, r.Root, r.Reactor, r.ReactorNick, r.Emoji,
		r.Remove, atMs, r.Venue, r.Sender, r.SenderDID, tags)
	if seq, err := insertedSeq(res, err); err != nil {
		return false, fmt.Errorf("eventstore: file reaction %s: %w", r.EventID, err)
	} else if seq == 0 {
		return false, fmt.Errorf("%w: reaction %s", ErrDuplicate, r.EventID)
	}
	err = tx.QueryRowContext(ctx, `SELECT 1 FROM reaction_log WHERE root_msgid = ?1 AND reactor = ?2 AND emoji = ?3
		AND (time_ms > ?4 OR (time_ms = ?4 AND event_msgid > ?5)) LIMIT 1`,
		r.Root, r.Reactor, r.Emoji, atMs, r.EventID).Scan(&one)
	switch {
	case err == nil:
		return false, nil // a newer event of this reaction was applied already
	case !errors.Is(err, sql.ErrNoRows):
		return false, fmt.Errorf("eventstore: order reaction %s: %w", r.EventID, err)
	}
	if r.Remove {
		_, err = tx.ExecContext(ctx, `DELETE FROM reactions WHERE root_msgid = ? AND reactor = ? AND emoji = ?`,
			r.Root, r.Reactor, r.Emoji)
	} else {
		_, err = tx.ExecContext(ctx, `INSERT OR IGNORE INTO reactions(root_msgid, reactor, emoji, reactor_nick, time_ms)
			VALUES (?, ?, ?, ?, ?)`, r.Root, r.Reactor, r.Emoji, r.ReactorNick, atMs)
	}
	if err != nil {
		return false, fmt.Errorf("eventstore: apply reaction %s: %w", r.EventID, err)
	}
	return true, nil
}

// ReactionLogAfter returns up to limit reaction events made on origin with seq > afterSeq, in
// order. Seq is this store's own sequence.
func (s *Store) ReactionLogAfter(ctx context.Context, origin string, afterSeq int64, limit int) ([]ReactionEvent, error) {
	if err := s.checkOpen(ctx); err != nil {
		return nil, err
	}
	limit, err := clampLimit(limit)
	if err != nil {
		return nil, err
	}
	rows, err := s.readDB.QueryContext(ctx, `SELECT seq, event_msgid, origin, root_msgid, reactor, reactor_nick, emoji,
		removed, time_ms, venue, sender, sender_did, tags_json
		FROM reaction_log WHERE origin = ? AND seq > ? ORDER BY seq LIMIT ?`, origin, afterSeq, limit)
	if err != nil {
		return nil, s.wrapReadErr("reaction log after", err)
	}
	defer rows.Close()
	var out []ReactionEvent
	for rows.Next() {
		var r ReactionEvent
		var atMs int64
		var tags string
		if err := rows.Scan(&r.Seq, &r.EventID, &r.Origin, &r.Root, &r.Reactor, &r.ReactorNick, &r.Emoji,
			&r.Remove, &atMs, &r.Venue, &r.Sender, &r.SenderDID, &tags); err != nil {
			return nil, s.wrapReadErr("reaction log after", err)
		}
		if r.Tags, err = decodeTags(tags); err != nil {
			return nil, fmt.Errorf("eventstore: reaction event %d: %w", r.Seq, err)
		}
		r.At = time.UnixMilli(atMs).UTC()
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrapReadErr("reaction log after", err)
	}
	if err := s.awaitDurable(); err != nil {
		return nil, err
	}
	return out, nil
}
