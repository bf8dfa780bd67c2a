package rest

import (
	"context"
	"encoding/json"
	"maps"

	"github.com/palaver-chat/palaver/node/eventstore"
)

// Message is an item of history, search and export (freeq-reference §3.3).
// An edited message appears in its current form: msgid is the latest
// revision's, replaces_msgid the original's, tags those of the revision
// (with +draft/edit naming the original); id and timestamp stay the
// original's, so the message keeps its place in the history.
type Message struct {
	// ID is the store's row number of the original message.
	ID int64 `json:"id"`
	// Sender is nick!user@host at send time.
	Sender string `json:"sender"`
	Text   string `json:"text"`
	// Timestamp is the server time in Unix seconds; the paging cursor.
	Timestamp int64 `json:"timestamp"`
	// Tags are the stored client tags plus msgid and, for an authenticated
	// sender, account (the sender's DID).
	Tags  map[string]string `json:"tags"`
	MsgID string            `json:"msgid"`
	// ReplacesMsgID is set on an edited message: the msgid it revises.
	ReplacesMsgID string `json:"replaces_msgid,omitempty"`
}

// StoredMessage is the single-message lookup: one stored row, as stored,
// with its channel and sender DID. An edit is its own row, whose
// replaces_msgid names the original.
type StoredMessage struct {
	Channel       string            `json:"channel"`
	MsgID         string            `json:"msgid"`
	Sender        string            `json:"sender"`
	SenderDID     *string           `json:"sender_did"`
	Text          string            `json:"text"`
	Timestamp     int64             `json:"timestamp"`
	Tags          map[string]string `json:"tags"`
	ReplacesMsgID *string           `json:"replaces_msgid"`
}

// viewMessage renders a message of a view (current form).
func viewMessage(m eventstore.Message) Message {
	out := Message{
		ID: m.Seq, Sender: m.Sender, Text: m.Text, Timestamp: m.Time.Unix(), MsgID: m.MsgID,
	}
	if m.Revision != "" {
		out.MsgID = m.Revision
		out.ReplacesMsgID = m.MsgID
	}
	out.Tags = messageTags(m.Tags, out.MsgID, m.SenderDID)
	return out
}

func viewMessages(msgs []eventstore.Message) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = viewMessage(m)
	}
	return out
}

// storedMessage renders a raw row.
func storedMessage(m eventstore.Message) StoredMessage {
	return StoredMessage{
		Channel: m.Venue, MsgID: m.MsgID, Sender: m.Sender, SenderDID: nullable(m.SenderDID),
		Text: m.Text, Timestamp: m.Time.Unix(), Tags: messageTags(m.Tags, m.MsgID, m.SenderDID),
		ReplacesMsgID: nullable(m.ReplacesMsgID),
	}
}

// messageTags copies the stored tags and adds msgid and account, which the
// store keeps as columns rather than tags.
func messageTags(stored map[string]string, msgid, did string) map[string]string {
	tags := make(map[string]string, len(stored)+2)
	maps.Copy(tags, stored)
	tags["msgid"] = msgid
	if did != "" {
		tags["account"] = did
	}
	return tags
}

// nullable is nil for "", so that JSON says null.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// reactionTallies is implemented by the event store; a store without reactions leaves the tally
// out.
type reactionTallies interface {
	Reactions(ctx context.Context, roots []string) (map[string]map[string]int, error)
}

// withReactions adds each message's reaction tally to its tags as +freeq.at/reactions, a JSON
// object of counts by emoji, as IRC history replays it.
func (s *Server) withReactions(ctx context.Context, msgs []eventstore.Message) []eventstore.Message {
	store, ok := s.cfg.Events.(reactionTallies)
	if !ok || len(msgs) == 0 {
		return msgs
	}
	roots := make([]string, len(msgs))
	for i := range msgs {
		roots[i] = msgs[i].MsgID
	}
	tallies, err := store.Reactions(ctx, roots)
	if err != nil || len(tallies) == 0 {
		return msgs
	}
	for i := range msgs {
		t := tallies[msgs[i].MsgID]
		if len(t) == 0 {
			continue
		}
		data, err := json.Marshal(t)
		if err != nil {
			continue
		}
		tags := make(map[string]string, len(msgs[i].Tags)+1)
		maps.Copy(tags, msgs[i].Tags)
		tags["+freeq.at/reactions"] = string(data)
		msgs[i].Tags = tags
	}
	return msgs
}
