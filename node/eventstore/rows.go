package eventstore

import (
	"database/sql"
	"fmt"
	"time"
)

// viewColumns select a root in its current form (latest revision's text and tags); rawColumns select
// the row as stored. Both scan with scanMessage. The table is always aliased m.
const (
	viewColumns = `m.seq, m.msgid, m.venue, m.command, m.sender, m.sender_nick, m.sender_did,
		COALESCE(m.rev_text, m.text), COALESCE(m.rev_tags_json, m.tags_json), m.time_ms,
		COALESCE(m.replaces_msgid, ''), m.origin, m.deleted_at_ms, COALESCE(m.rev_msgid, ''), m.incarnation, m.public`
	rawColumns = `m.seq, m.msgid, m.venue, m.command, m.sender, m.sender_nick, m.sender_did,
		m.text, m.tags_json, m.time_ms, COALESCE(m.replaces_msgid, ''), m.origin, m.deleted_at_ms, '', m.incarnation, m.public`
	// liveRoot is the condition of the partial indexes: a root that is not deleted.
	liveRoot = `m.replaces_msgid IS NULL AND m.deleted_at_ms IS NULL`
)

type scanner interface{ Scan(dest ...any) error }

func scanMessage(sc scanner) (Message, error) {
	var (
		m         Message
		tagsJSON  string
		timeMs    int64
		deletedAt sql.NullInt64
	)
	err := sc.Scan(&m.Seq, &m.MsgID, &m.Venue, &m.Command, &m.Sender, &m.SenderNick, &m.SenderDID,
		&m.Text, &tagsJSON, &timeMs, &m.ReplacesMsgID, &m.Origin, &deletedAt, &m.Revision, &m.Incarnation, &m.Public)
	if err != nil {
		return Message{}, err
	}
	m.Time = time.UnixMilli(timeMs).UTC()
	if deletedAt.Valid {
		m.DeletedAt = time.UnixMilli(deletedAt.Int64).UTC()
	}
	if m.Tags, err = decodeTags(tagsJSON); err != nil {
		return Message{}, fmt.Errorf("msgid %s: %w", m.MsgID, err)
	}
	return m, nil
}

// scanMessages reads every row; rows is closed.
func scanMessages(rows *sql.Rows, capacity int) ([]Message, error) {
	return appendMessages(make([]Message, 0, capacity), rows)
}

// appendMessages appends every row to out; rows is closed.
func appendMessages(out []Message, rows *sql.Rows) ([]Message, error) {
	defer rows.Close()
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func reverse(msgs []Message) {
	for i, j := 0, len(msgs)-1; i < j; i, j = i+1, j-1 {
		msgs[i], msgs[j] = msgs[j], msgs[i]
	}
}
