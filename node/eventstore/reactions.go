package eventstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// MaxEmojiBytes bounds a reaction's emoji (a grapheme cluster can be long, but not this long).
const MaxEmojiBytes = 64

// React records that reactor reacted to root with emoji (once per reactor and emoji).
func (s *Store) React(ctx context.Context, root, reactor, nick, emoji string, at time.Time) error {
	if err := s.checkOpen(ctx); err != nil {
		return err
	}
	if root == "" || reactor == "" || emoji == "" || len(emoji) > MaxEmojiBytes {
		return fmt.Errorf("%w: reaction needs a root, a reactor and an emoji of at most %d bytes", ErrInvalidArgument, MaxEmojiBytes)
	}
	committed := s.committing()
	_, err := s.writeDB.ExecContext(ctx, `INSERT OR IGNORE INTO reactions(root_msgid, reactor, emoji, reactor_nick, time_ms)
		VALUES (?, ?, ?, ?, ?)`, root, reactor, emoji, nick, at.UnixMilli())
	committed()
	s.generation.Add(1)
	if err != nil {
		return fmt.Errorf("eventstore: react: %w", err)
	}
	return s.syncCommitted()
}

// Unreact removes a reaction; removing one that does not exist changes nothing.
func (s *Store) Unreact(ctx context.Context, root, reactor, emoji string) error {
	if err := s.checkOpen(ctx); err != nil {
		return err
	}
	committed := s.committing()
	_, err := s.writeDB.ExecContext(ctx, `DELETE FROM reactions WHERE root_msgid = ? AND reactor = ? AND emoji = ?`,
		root, reactor, emoji)
	committed()
	s.generation.Add(1)
	if err != nil {
		return fmt.Errorf("eventstore: unreact: %w", err)
	}
	return s.syncCommitted()
}

// Reactions returns, for each of the given roots that has any, the count of reactors per emoji.
func (s *Store) Reactions(ctx context.Context, roots []string) (map[string]map[string]int, error) {
	out := map[string]map[string]int{}
	if len(roots) == 0 {
		return out, nil
	}
	if err := s.checkOpen(ctx); err != nil {
		return nil, err
	}
	list, err := json.Marshal(roots)
	if err != nil {
		return nil, fmt.Errorf("eventstore: reactions: %w", err)
	}
	rows, err := s.r.reactions.QueryContext(ctx, string(list))
	if err != nil {
		return nil, s.wrapReadErr("reactions", err)
	}
	defer rows.Close()
	for rows.Next() {
		var root, emoji string
		if err := rows.Scan(&root, &emoji); err != nil {
			return nil, s.wrapReadErr("reactions", err)
		}
		if out[root] == nil {
			out[root] = map[string]int{}
		}
		out[root][emoji]++
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrapReadErr("reactions", err)
	}
	return out, nil
}
