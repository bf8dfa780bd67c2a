package eventstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// Channel events (IRCv3 draft/event-playback): the JOIN, PART, QUIT, KICK, MODE, TOPIC, NICK and
// RENAME lines of a channel, kept so that CHATHISTORY can replay them to the clients that asked
// for them. They are replicated state changes, not chat: every node files them from its own
// applied Raft log, with an id and a time derived from the log entry, so every node holds the same
// rows. They live in a table of their own (channel_events) that no message view, search, export,
// exchange or federation query reads: the REST history routes and the message lookups never
// return them. A QUIT or NICK is filed once per channel it was shown in, under the same msgid.
//
// Order: a venue's events are ordered by (time_ms, msgid). Merged with the venue's messages, the
// events of a millisecond come before its messages (EventPos).

// ChannelEvent is one state-change line of a channel.
type ChannelEvent struct {
	Venue   string    // folded channel name
	MsgID   string    // derived from the Raft entry: the same on every node
	Time    time.Time // the proposer's time (millisecond precision)
	Index   uint64    // the Raft log index of the entry that made the change
	Command string    // JOIN, PART, QUIT, KICK, MODE, TOPIC, NICK, RENAME
	Source  string    // nick!user@host (or the server name) the line comes from
	Account string    // the actor's DID, "" for a guest or the server
	Params  []string  // the line's parameters
}

// MaxEventParams bounds the parameters of a stored event line (an IRC line has at most 15).
const MaxEventParams = 15

// EventPos is an exclusive bound in the order of a venue's events: (Ms, MsgID) compared in that
// order. EventsBefore(ms) and EventsAfter(ms) give the bounds around a whole millisecond.
type EventPos struct {
	Ms    int64
	MsgID string
}

// eventsAll is above every msgid of a millisecond: msgids are ULIDs (Crockford base 32), all
// below '~'.
const eventsAll = "~"

// EventsBefore is the exclusive upper bound below every event of millisecond ms and later.
func EventsBefore(ms int64) EventPos { return EventPos{Ms: ms} }

// EventsAfter is the exclusive lower bound above every event of millisecond ms and earlier.
func EventsAfter(ms int64) EventPos { return EventPos{Ms: ms, MsgID: eventsAll} }

// Open bounds of the event order.
var (
	EventsFirst = EventPos{Ms: math.MinInt64}
	EventsLast  = EventPos{Ms: math.MaxInt64}
)

// FileChannelEvents stores events; an event already stored under its venue and msgid is left
// as it is, so filing an entry again (Raft re-applies the entries after its snapshot at start)
// changes nothing. The write is committed, not synced: the Raft log is the durable record, and
// the entries after the last snapshot are filed again when the node restarts.
func (s *Store) FileChannelEvents(ctx context.Context, evs []ChannelEvent) error {
	if len(evs) == 0 {
		return nil
	}
	if err := s.checkOpenNoWait(ctx); err != nil {
		return err
	}
	type row struct {
		Venue   string `json:"v"`
		MsgID   string `json:"i"`
		Time    int64  `json:"t"`
		Index   uint64 `json:"x"`
		Command string `json:"c"`
		Source  string `json:"s"`
		Account string `json:"a"`
		Params  string `json:"p"`
	}
	rows := make([]row, 0, len(evs))
	for _, e := range evs {
		if e.Venue == "" || e.MsgID == "" || e.Command == "" || len(e.Params) > MaxEventParams {
			return fmt.Errorf("%w: a channel event needs a venue, a msgid, a command and at most %d parameters",
				ErrInvalidArgument, MaxEventParams)
		}
		if err := validTime(e.Time); err != nil {
			return fmt.Errorf("%w: channel event %s: %v", ErrInvalidArgument, e.MsgID, err)
		}
		params, err := json.Marshal(nonNil(e.Params))
		if err != nil {
			return fmt.Errorf("eventstore: channel event %s: %w", e.MsgID, err)
		}
		rows = append(rows, row{e.Venue, e.MsgID, e.Time.UnixMilli(), e.Index, e.Command, e.Source, e.Account, string(params)})
	}
	batch, err := json.Marshal(rows)
	if err != nil {
		return fmt.Errorf("eventstore: channel events: %w", err)
	}
	committed := s.committing()
	_, err = s.writeDB.ExecContext(ctx, `INSERT OR IGNORE INTO channel_events
		(venue, msgid, time_ms, log_index, command, source, account, params_json)
		SELECT j.value ->> 'v', j.value ->> 'i', j.value ->> 't', j.value ->> 'x', j.value ->> 'c',
			j.value ->> 's', j.value ->> 'a', j.value ->> 'p' FROM json_each(?) AS j`, string(batch))
	committed()
	s.generation.Add(1)
	if err != nil {
		return fmt.Errorf("eventstore: file channel events: %w", s.wrapWriteErr(err))
	}
	return nil
}

// DropChannelEvents removes a venue's events filed from entries before index: a channel renamed
// to a name that an earlier, deleted channel had does not inherit that channel's events.
func (s *Store) DropChannelEvents(ctx context.Context, venue string, beforeIndex uint64) error {
	if err := s.checkOpenNoWait(ctx); err != nil {
		return err
	}
	committed := s.committing()
	_, err := s.writeDB.ExecContext(ctx, `DELETE FROM channel_events WHERE venue = ? AND log_index < ?`, venue, beforeIndex)
	committed()
	s.generation.Add(1)
	if err != nil {
		return fmt.Errorf("eventstore: drop channel events of %s: %w", venue, s.wrapWriteErr(err))
	}
	return nil
}

// ChannelEventByID returns a venue's event by msgid; ErrNotFound when there is none.
func (s *Store) ChannelEventByID(ctx context.Context, venue, msgid string) (ChannelEvent, error) {
	if err := s.checkOpen(ctx); err != nil {
		return ChannelEvent{}, err
	}
	rows, err := s.readDB.QueryContext(ctx, `SELECT `+eventColumns+` FROM channel_events
		WHERE venue = ? AND msgid = ?`, venue, msgid)
	if err != nil {
		return ChannelEvent{}, s.wrapReadErr("channel event "+msgid, err)
	}
	out, err := scanEvents(rows, 1)
	if err != nil {
		return ChannelEvent{}, s.wrapReadErr("channel event "+msgid, err)
	}
	if len(out) == 0 {
		return ChannelEvent{}, fmt.Errorf("%w: event %s in %s", ErrNotFound, msgid, venue)
	}
	return out[0], nil
}

// OldestEvents returns the oldest limit events of venue strictly between lo and hi, filed from
// entries at or after sinceIndex, oldest first.
func (s *Store) OldestEvents(ctx context.Context, venue string, lo, hi EventPos, sinceIndex uint64, limit int) ([]ChannelEvent, error) {
	return s.eventRange(ctx, "ASC", venue, lo, hi, sinceIndex, limit)
}

// NewestEvents returns the newest limit events of venue strictly between lo and hi, filed from
// entries at or after sinceIndex, oldest first.
func (s *Store) NewestEvents(ctx context.Context, venue string, lo, hi EventPos, sinceIndex uint64, limit int) ([]ChannelEvent, error) {
	out, err := s.eventRange(ctx, "DESC", venue, lo, hi, sinceIndex, limit)
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, err
}

const eventColumns = `venue, msgid, time_ms, log_index, command, source, account, params_json`

// EventKey is an exclusive position in the log order of every venue's events: (Index, Venue,
// MsgID) compared in that order. The zero EventKey is before every event.
type EventKey struct {
	Index uint64
	Venue string
	MsgID string
}

// Key is the event's position in the log order.
func (e ChannelEvent) Key() EventKey { return EventKey{Index: e.Index, Venue: e.Venue, MsgID: e.MsgID} }

// EventsThrough returns up to limit events of every venue after after and filed from entries at
// or before through, in log order: what a node that did not apply those entries itself (it joined
// the cluster later, or installed a snapshot) files from a peer.
func (s *Store) EventsThrough(ctx context.Context, after EventKey, through uint64, limit int) ([]ChannelEvent, error) {
	limit, err := clampLimit(limit)
	if err != nil {
		return nil, err
	}
	if err := s.checkOpen(ctx); err != nil {
		return nil, err
	}
	if after.Index > math.MaxInt64 {
		return nil, nil
	}
	rows, err := s.readDB.QueryContext(ctx, `SELECT `+eventColumns+` FROM channel_events
		WHERE (log_index, venue, msgid) > (?1, ?2, ?3) AND log_index <= ?4
		ORDER BY log_index, venue, msgid LIMIT ?5`,
		int64(after.Index), after.Venue, after.MsgID, int64(min(through, math.MaxInt64)), limit)
	if err != nil {
		return nil, s.wrapReadErr("events through "+fmt.Sprint(through), err)
	}
	out, err := scanEvents(rows, min(limit, 64))
	if err != nil {
		return nil, s.wrapReadErr("events through "+fmt.Sprint(through), err)
	}
	return out, nil
}

func (s *Store) eventRange(ctx context.Context, dir, venue string, lo, hi EventPos, sinceIndex uint64, limit int) ([]ChannelEvent, error) {
	limit, err := clampLimit(limit)
	if err != nil {
		return nil, err
	}
	if err := s.checkOpen(ctx); err != nil {
		return nil, err
	}
	if sinceIndex > math.MaxInt64 {
		return nil, nil
	}
	rows, err := s.readDB.QueryContext(ctx, `SELECT `+eventColumns+` FROM channel_events
		WHERE venue = ?1 AND (time_ms, msgid) > (?2, ?3) AND (time_ms, msgid) < (?4, ?5) AND log_index >= ?6
		ORDER BY time_ms `+dir+`, msgid `+dir+` LIMIT ?7`,
		venue, lo.Ms, lo.MsgID, hi.Ms, hi.MsgID, int64(sinceIndex), limit)
	if err != nil {
		return nil, s.wrapReadErr("events of "+venue, err)
	}
	out, err := scanEvents(rows, min(limit, 64))
	if err != nil {
		return nil, s.wrapReadErr("events of "+venue, err)
	}
	return out, nil
}

func scanEvents(rows *sql.Rows, capacity int) ([]ChannelEvent, error) {
	defer rows.Close()
	out := make([]ChannelEvent, 0, capacity)
	for rows.Next() {
		var e ChannelEvent
		var ms, index int64
		var params string
		if err := rows.Scan(&e.Venue, &e.MsgID, &ms, &index, &e.Command, &e.Source, &e.Account, &params); err != nil {
			return nil, err
		}
		e.Time, e.Index = time.UnixMilli(ms).UTC(), uint64(index)
		if err := json.Unmarshal([]byte(params), &e.Params); err != nil {
			return nil, fmt.Errorf("event %s: params: %w", e.MsgID, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

func nonNil(p []string) []string {
	if p == nil {
		return []string{}
	}
	return p
}

// wrapWriteErr maps errors of a write that raced with Close onto ErrClosed.
func (s *Store) wrapWriteErr(err error) error {
	if s.closed.Load() && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("%w: %v", ErrClosed, err)
	}
	return err
}
