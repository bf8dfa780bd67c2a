package eventstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Resuming after a message (IRC CHATHISTORY AFTER msgid=, the assistance tools' replay).
//
// A reader that resumes after the last message it read wants every message it has not read yet.
// Seq order (commit order) is not quite the order in which a node delivers messages to its
// readers: a message stored from a peer is delivered by the Stored stream's subscriber some time
// after its commit, while one of this node's own clients is delivered at once, so a message with
// a lower seq can reach the readers after one with a higher seq. Each row therefore records, when
// it is stored, where a reader resuming after it starts (Message.ResumeFrom, written by the chat
// service): the lowest seq of its venue not yet delivered then. ResumeAfter reads from there.

// resumeArg binds Message.ResumeFrom: NULL when not recorded.
func resumeArg(from int64) any {
	if from <= 0 {
		return nil
	}
	return from
}

// ResumeAfter returns what a reader who read msgid (a message of venue, or an edit of one) may
// not have read: the live roots of venue stored after it, in seq order, preceded by those
// stored before it that had not yet been delivered when it was stored (its ResumeFrom). Those
// earlier ones take at most limit-1 places, so a page always reaches past msgid and a reader who
// pages from the last message of each answer moves on. Messages the reader did read may come
// again (readers drop copies by msgid); none delivered after msgid is left out. ErrNotFound when
// msgid is unknown or of another venue.
func (s *Store) ResumeAfter(ctx context.Context, venue, msgid string, limit int) ([]Message, error) {
	return s.messages().resumeAfter(ctx, venue, msgid, limit)
}

func (v view) resumeAfter(ctx context.Context, venue, msgid string, limit int) ([]Message, error) {
	s := v.s
	limit, err := clampLimit(limit)
	if err != nil {
		return nil, err
	}
	root, err := s.Root(ctx, msgid)
	if err != nil {
		return nil, err
	}
	if root.Venue != venue {
		return nil, fmt.Errorf("%w: %s is not a message of %s", ErrNotFound, msgid, venue)
	}
	var from int64
	if err := s.readDB.QueryRowContext(ctx, sqlResumeFrom, root.Seq).Scan(&from); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, msgid)
		}
		return nil, s.wrapReadErr("resume after "+msgid, err)
	}
	var out []Message
	if from < root.Seq && limit > 1 {
		back, err := v.exportAfter(ctx, venue, from-1, limit-1)
		if err != nil {
			return nil, err
		}
		for _, m := range back {
			if m.Seq >= root.Seq {
				break
			}
			out = append(out, m)
		}
	}
	next, err := v.exportAfter(ctx, venue, root.Seq, limit-len(out))
	if err != nil {
		return nil, err
	}
	return append(out, next...), nil
}

// sqlResumeFrom takes a root's seq.
const sqlResumeFrom = `SELECT COALESCE(resume_from, seq + 1) FROM messages WHERE seq = ?`

// MaxSeq is the greatest seq stored, 0 when none: where the chat service's record of what is
// delivered starts (every row stored before it started counts as delivered).
func (s *Store) MaxSeq(ctx context.Context) (int64, error) {
	if err := s.checkOpen(ctx); err != nil {
		return 0, err
	}
	var seq int64
	if err := s.readDB.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM messages`).Scan(&seq); err != nil {
		return 0, s.wrapReadErr("max seq", err)
	}
	return seq, nil
}
