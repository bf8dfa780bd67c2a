package eventstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Has reports whether a row with msgid is stored (root or edit, deleted or not).
func (s *Store) Has(ctx context.Context, msgid string) (bool, error) {
	if err := s.checkOpen(ctx); err != nil {
		return false, err
	}
	var one int
	err := s.r.has.QueryRowContext(ctx, msgid).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, s.wrapReadErr("has "+msgid, err)
	}
	return true, nil
}

// Get returns the row stored under msgid as stored (its own text and tags), deleted or not:
// DeletedAt is set when it is deleted. Revision is always empty. Unknown → ErrNotFound.
func (s *Store) Get(ctx context.Context, msgid string) (Message, error) {
	if err := s.checkOpen(ctx); err != nil {
		return Message{}, err
	}
	m, err := scanMessage(s.r.raw.QueryRowContext(ctx, msgid))
	if errors.Is(err, sql.ErrNoRows) {
		return Message{}, fmt.Errorf("%w: %s", ErrNotFound, msgid)
	}
	if err != nil {
		return Message{}, s.wrapReadErr("get "+msgid, err)
	}
	return m, nil
}

// Root returns the raw root row of msgid: the row itself for a root, the row it revises for an
// edit. ErrNotFound when msgid or (for an edit) its root is not stored.
func (s *Store) Root(ctx context.Context, msgid string) (Message, error) {
	m, err := s.Get(ctx, msgid)
	if err != nil || m.ReplacesMsgID == "" {
		return m, err
	}
	root, err := s.Get(ctx, m.ReplacesMsgID)
	if err != nil {
		return Message{}, fmt.Errorf("root of %s: %w", msgid, err)
	}
	return root, nil
}

// Current returns the root of msgid (a root's or an edit's msgid) in its current form, as the views
// show it. ErrNotFound when unknown or deleted.
func (s *Store) Current(ctx context.Context, msgid string) (Message, error) {
	root, err := s.Root(ctx, msgid)
	if err != nil {
		return Message{}, err
	}
	m, err := scanMessage(s.r.current.QueryRowContext(ctx, root.Seq))
	if errors.Is(err, sql.ErrNoRows) {
		return Message{}, fmt.Errorf("%w: %s is deleted", ErrNotFound, msgid)
	}
	if err != nil {
		return Message{}, s.wrapReadErr("current "+msgid, err)
	}
	return m, nil
}
