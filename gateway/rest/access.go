package rest

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// Read authorization (freeq-reference §3.2). Discoverable channels (no +i,
// +k or +E) are open to anyone. A restricted channel is readable with a
// bearer whose DID is the founder's, a DID op's, or the DID of a session
// that is a member now. Channels that are not in the replica are unknown
// (404, failing closed); DM venues are never served (403). A channel
// created again under an old name serves only its own history and the
// earlier channels' public messages (eventstore's "Channel incarnations");
// a message looked up by msgid that its channel no longer shows is not
// found, and the 403 of a message lookup does not name the channel. The
// rule itself is fsm.State.MayRead, shared with the signing API.

// channelParam reads and checks the channel named by a path parameter or a
// query value, answering 400 (or 403 for a DM venue) itself.
func channelParam(c *gin.Context, raw string) (string, bool) {
	name, err := parseChannelName(raw)
	if errors.Is(err, errDirectMessages) {
		WriteError(c, http.StatusForbidden, "Direct messages are not readable over the REST API")
		return "", false
	}
	if err != nil {
		WriteError(c, http.StatusBadRequest, "Bad channel name: "+err.Error())
		return "", false
	}
	return name, true
}

// readPolicy says who may read a route's channel.
type readPolicy int

const (
	// membersToo lets a member bearer read a restricted channel.
	membersToo readPolicy = iota
	// publicOnly serves discoverable channels only (export).
	publicOnly
)

// withChannel runs f on the named channel under the state's read lock
// when the request may read it; otherwise it answers 404 or 403 and
// returns false. f must copy what it needs out of the state.
func (s *Server) withChannel(c *gin.Context, name string, policy readPolicy, f func(st *fsm.State, ch fsm.ChannelView)) bool {
	found, allowed := false, false
	s.cfg.State.Read(func(st *fsm.State) {
		ch, ok := st.Channel(name)
		if !ok {
			return
		}
		found = true
		switch policy {
		case publicOnly:
			allowed = ch.Discoverable()
		default:
			allowed = st.MayRead(ch, DID(c))
		}
		if allowed && f != nil {
			f(st, ch)
		}
	})
	switch {
	case !found:
		WriteError(c, http.StatusNotFound, "No such channel: "+name)
	case !allowed && policy == publicOnly:
		WriteError(c, http.StatusForbidden, name+" is not a public channel; only public channels can be exported")
	case !allowed:
		WriteError(c, http.StatusForbidden, name+" is restricted (+i, +k or +E); send the bearer token of a member, its founder or one of its operators")
	}
	return found && allowed
}

// messageReadable checks that the request may read a message looked up by msgid, answering 404 or
// 403 itself otherwise. A message its channel no longer shows (the channel is gone, or it is a
// restricted message of an earlier channel of that name: fsm.Channel.MessageVisible) is not found.
// Neither answer names the channel: the reader does not know which one holds the message.
func (s *Server) messageReadable(c *gin.Context, m eventstore.Message) bool {
	visible, allowed := false, false
	s.cfg.State.Read(func(st *fsm.State) {
		ch, _ := st.Channel(m.Venue)
		visible = ch.MessageVisible(m.Incarnation, m.Public)
		allowed = visible && st.MayRead(ch, DID(c))
	})
	switch {
	case !visible:
		WriteError(c, http.StatusNotFound, "Message "+m.MsgID+" not found")
	case !allowed:
		WriteError(c, http.StatusForbidden, "The message is in a restricted channel (+i, +k or +E); send the bearer token of a member, its founder or one of its operators")
	}
	return allowed
}

// shownIn reports whether a message read by msgid may be shown through
// channel as it is now: it was written there, in the channel's current
// incarnation or while the channel was public (fsm.Channel.MessageVisible).
func (s *Server) shownIn(channel string, m eventstore.Message) bool {
	if m.Venue != channel {
		return false
	}
	shown := false
	s.cfg.State.Read(func(st *fsm.State) {
		ch, _ := st.Channel(channel)
		shown = ch.MessageVisible(m.Incarnation, m.Public)
	})
	return shown
}

// incarnationInto is a withChannel callback that copies the channel's incarnation into dst.
func incarnationInto(dst *string) func(*fsm.State, fsm.ChannelView) {
	return func(_ *fsm.State, ch fsm.ChannelView) { *dst = ch.Incarnation() }
}
