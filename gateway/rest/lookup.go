package rest

import (
	"errors"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/node/eventstore"
)

// message serves GET /api/v1/messages/{msgid}: one stored row (a message
// or one of its edits) as stored. Deleted messages, and the TAGMSGs kept in history for IRC event
// playback, are not found. The
// channel's read authorization applies; messages of a DM venue are never
// served (403, as freeq's authorize_channel_read answers for dm: keys).
func (s *Server) message(c *gin.Context) {
	raw := c.Param("msgid")
	if !isULID(raw) {
		WriteError(c, http.StatusBadRequest, "Bad msgid "+quoteParam(raw)+": a msgid is a 26-character ULID")
		return
	}
	if !s.requireStore(c) {
		return
	}
	msgid := strings.ToUpper(raw)
	m, err := s.cfg.Events.Get(c.Request.Context(), msgid)
	switch {
	case errors.Is(err, eventstore.ErrNotFound):
		WriteError(c, http.StatusNotFound, "Message "+msgid+" not found")
		return
	case err != nil:
		s.storeFailed(c, "message", err)
		return
	case !m.DeletedAt.IsZero(), m.Command == "TAGMSG": // a TAGMSG kept in history is an event, no message
		WriteError(c, http.StatusNotFound, "Message "+msgid+" not found")
		return
	case strings.HasPrefix(m.Venue, "dm:"):
		WriteError(c, http.StatusForbidden, "Direct messages are not readable over the REST API")
		return
	}
	if !s.messageReadable(c, m) {
		return
	}
	c.PureJSON(http.StatusOK, storedMessage(m))
}
