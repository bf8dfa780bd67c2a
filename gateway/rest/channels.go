package rest

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// ChannelInfo is an item of GET /api/v1/channels.
type ChannelInfo struct {
	Name    string `json:"name"`
	Topic   string `json:"topic"`
	Members int    `json:"members"`
	Modes   string `json:"modes"`
}

// Topic is GET /api/v1/channels/{name}/topic.
type Topic struct {
	Channel string  `json:"channel"`
	Topic   *string `json:"topic"`
	SetBy   *string `json:"set_by"`
	// SetAt is in Unix seconds.
	SetAt *int64 `json:"set_at"`
}

// Pin is one pinned message.
type Pin struct {
	// MsgID is the original (root) message's.
	MsgID string `json:"msgid"`
	// From is the author's nick, "unknown" when the message is gone.
	From string `json:"from"`
	// Text is the message's current revision, "[message not found]" when
	// it is gone.
	Text     string `json:"text"`
	PinnedBy string `json:"pinned_by"`
	// PinnedAt is an ISO 8601 (RFC 3339) timestamp.
	PinnedAt string `json:"pinned_at"`
}

// ChannelPins is GET /api/v1/channels/{name}/pins.
type ChannelPins struct {
	Channel string `json:"channel"`
	Pins    []Pin  `json:"pins"`
}

// listChannels serves GET /api/v1/channels: the discoverable channels that
// have members or a topic, most members first, then by name.
func (s *Server) listChannels(c *gin.Context) {
	list := []ChannelInfo{}
	s.cfg.State.Read(func(st *fsm.State) {
		for ch := range st.Channels() {
			if !ch.Discoverable() || (ch.MemberCount() == 0 && ch.Topic() == "") {
				continue
			}
			list = append(list, ChannelInfo{Name: ch.Name(), Topic: ch.Topic(), Members: ch.MemberCount(), Modes: ch.ModeString()})
		}
	})
	sort.Slice(list, func(i, j int) bool {
		if list[i].Members != list[j].Members {
			return list[i].Members > list[j].Members
		}
		return list[i].Name < list[j].Name
	})
	c.PureJSON(http.StatusOK, list)
}

// channelTopic serves GET /api/v1/channels/{name}/topic.
func (s *Server) channelTopic(c *gin.Context) {
	name, ok := channelParam(c, c.Param("name"))
	if !ok {
		return
	}
	topic := Topic{Channel: name}
	if !s.withChannel(c, name, membersToo, func(_ *fsm.State, ch fsm.ChannelView) {
		if ch.Topic() != "" {
			topic.Topic = nullable(ch.Topic())
			topic.SetBy = nullable(ch.TopicBy())
			if ch.TopicAt() != 0 {
				at := time.UnixMilli(ch.TopicAt()).Unix()
				topic.SetAt = &at
			}
		}
	}) {
		return
	}
	c.PureJSON(http.StatusOK, topic)
}

// channelPins serves GET /api/v1/channels/{name}/pins: {channel, pins}.
func (s *Server) channelPins(c *gin.Context) {
	name, pins, ok := s.pins(c, c.Param("name"))
	if ok {
		c.PureJSON(http.StatusOK, ChannelPins{Channel: name, Pins: pins})
	}
}

// pinList serves GET /api/v1/pins/{channel}: the bare array of pins.
func (s *Server) pinList(c *gin.Context) {
	if _, pins, ok := s.pins(c, c.Param("channel")); ok {
		c.PureJSON(http.StatusOK, pins)
	}
}

// pins reads a channel's pins, newest first, each with the current text of
// the pinned message.
func (s *Server) pins(c *gin.Context, raw string) (string, []Pin, bool) {
	name, ok := channelParam(c, raw)
	if !ok {
		return "", nil, false
	}
	var entries []fsm.PinEntry
	if !s.withChannel(c, name, membersToo, func(_ *fsm.State, ch fsm.ChannelView) {
		entries = ch.Pins()
	}) {
		return "", nil, false
	}
	pins := make([]Pin, 0, len(entries))
	for _, e := range entries {
		from, text, err := s.pinnedMessage(c.Request.Context(), name, e.MsgID)
		if err != nil {
			s.storeFailed(c, "pins", err)
			return "", nil, false
		}
		pins = append(pins, Pin{
			MsgID: e.MsgID, From: from, Text: text, PinnedBy: e.PinnedBy,
			PinnedAt: time.UnixMilli(e.PinnedAt).UTC().Format(time.RFC3339),
		})
	}
	return name, pins, true
}

// pinnedMessage is the author and current text of a message pinned in
// channel, or the placeholders when it is deleted, unknown, not one the
// channel may show (shownIn), or there is no store.
func (s *Server) pinnedMessage(ctx context.Context, channel, msgid string) (from, text string, err error) {
	const unknownFrom, missingText = "unknown", "[message not found]"
	if s.cfg.Events == nil {
		return unknownFrom, missingText, nil
	}
	m, err := s.cfg.Events.Current(ctx, msgid)
	switch {
	case errors.Is(err, eventstore.ErrNotFound):
		return unknownFrom, missingText, nil
	case err != nil:
		return "", "", err
	case !s.shownIn(channel, m):
		return unknownFrom, missingText, nil
	}
	return m.SenderNick, m.Text, nil
}
