package rest

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/node/eventstore"
)

// maxQueryBytes bounds a search query.
const maxQueryBytes = 1024

// pageRequest is a parsed read of a channel's messages.
type pageRequest struct {
	channel string
	limit   int
	before  cursor
}

// parsePage reads the channel (from the path parameter param, or from the
// query when param is "") and the paging parameters, answering 400 itself.
func parsePage(c *gin.Context, channelRaw string, limits pageLimits) (pageRequest, bool) {
	name, ok := channelParam(c, channelRaw)
	if !ok {
		return pageRequest{}, false
	}
	raw, present := c.GetQuery("limit")
	limit, err := parseLimit(raw, present, limits)
	if err != nil {
		WriteError(c, http.StatusBadRequest, "Bad limit: "+err.Error())
		return pageRequest{}, false
	}
	before, err := parseBefore(c.Query("before"))
	if err != nil {
		WriteError(c, http.StatusBadRequest, "Bad before: "+err.Error())
		return pageRequest{}, false
	}
	return pageRequest{channel: name, limit: limit, before: before}, true
}

// requireStore answers 503 when the node keeps no messages.
func (s *Server) requireStore(c *gin.Context) bool {
	if s.cfg.Events == nil {
		WriteError(c, http.StatusServiceUnavailable, "This server keeps no message store")
		return false
	}
	return true
}

// storeFailed answers a failed store read.
func (s *Server) storeFailed(c *gin.Context, op string, err error) {
	ctx := c.Request.Context()
	switch {
	case errors.Is(err, eventstore.ErrClosed):
		WriteError(c, http.StatusServiceUnavailable, "The message store is shutting down")
	case ctx.Err() != nil:
		WriteError(c, http.StatusServiceUnavailable, "The request ended before the message store answered")
	default:
		s.logger.ErrorContext(ctx, "message store read failed", "op", op, "path", c.Request.URL.Path, "err", err)
		WriteError(c, http.StatusInternalServerError, "The message store failed to answer")
	}
}

// pageByUnix reads a page of venue older than a Unix-seconds cursor (or
// the newest page), oldest first, trimmed to whole seconds.
func (s *Server) pageByUnix(ctx context.Context, venue string, before cursor, limit int) ([]eventstore.Message, error) {
	var beforeUnix int64
	switch {
	case before.kind == cursorMsgID:
		return nil, nil // a msgid where seconds belong: nothing (contract §4, paging)
	case before.kind == cursorUnix && before.unix == 0:
		return nil, nil // nothing is older than the epoch
	case before.kind == cursorUnix:
		beforeUnix = before.unix
	}
	got, err := s.cfg.Events.PageBeforeUnix(ctx, venue, beforeUnix, fetchSize(limit))
	if err != nil {
		return nil, err
	}
	return trimOldestFirst(got, limit), nil
}

// channelHistory serves GET /api/v1/channels/{name}/history: the newest
// page before a Unix-seconds cursor, oldest first.
func (s *Server) channelHistory(c *gin.Context) {
	req, ok := parsePage(c, c.Param("name"), historyLimits)
	var inc string
	if !ok || !s.requireStore(c) || !s.withChannel(c, req.channel, membersToo, incarnationInto(&inc)) {
		return
	}
	s.serveHistoryPage(c, pageKey{venue: req.channel, incarnation: inc, before: req.before, limit: req.limit}, func(ctx context.Context) ([]eventstore.Message, error) {
		return s.pageByUnix(ctx, req.channel, req.before, req.limit)
	})
}

// historyByMsgID serves GET /api/v1/history/{channel}, whose before is a
// msgid: the page older than that message, an exact walk. Unix seconds are
// accepted too, with the same meaning as on the channel history route.
func (s *Server) historyByMsgID(c *gin.Context) {
	req, ok := parsePage(c, c.Param("channel"), historyLimits)
	var inc string
	if !ok || !s.requireStore(c) || !s.withChannel(c, req.channel, membersToo, incarnationInto(&inc)) {
		return
	}
	key := pageKey{byMsgID: true, venue: req.channel, incarnation: inc, before: req.before, limit: req.limit}
	s.serveHistoryPage(c, key, func(ctx context.Context) ([]eventstore.Message, error) {
		if req.before.kind != cursorMsgID {
			return s.pageByUnix(ctx, req.channel, req.before, req.limit)
		}
		msgs, err := s.cfg.Events.Before(ctx, req.channel, eventstore.Bound{MsgID: req.before.msgid}, req.limit)
		if errors.Is(err, eventstore.ErrNotFound) {
			return nil, nil // a msgid this channel never held: nothing before it
		}
		return msgs, err
	})
}

// search serves GET /api/v1/search?channel&q: messages holding every term
// of q, newest first.
func (s *Server) search(c *gin.Context) {
	channel, hasChannel := c.GetQuery("channel")
	query, hasQuery := c.GetQuery("q")
	switch {
	case !hasChannel || channel == "":
		WriteError(c, http.StatusBadRequest, "The channel parameter is required")
		return
	case !hasQuery || strings.TrimSpace(query) == "":
		WriteError(c, http.StatusBadRequest, "The q parameter (the search terms) is required")
		return
	case len(query) > maxQueryBytes:
		WriteError(c, http.StatusBadRequest, "The query is longer than 1024 bytes")
		return
	}
	req, ok := parsePage(c, channel, searchLimits)
	if !ok || !s.requireStore(c) || !s.withChannel(c, req.channel, membersToo, nil) {
		return
	}
	var beforeUnix int64
	switch {
	case req.before.kind == cursorMsgID, req.before.kind == cursorUnix && req.before.unix == 0:
		c.PureJSON(http.StatusOK, []Message{})
		return
	case req.before.kind == cursorUnix:
		beforeUnix = req.before.unix
	}
	got, err := s.cfg.Events.Search(c.Request.Context(), req.channel, query, beforeUnix, fetchSize(req.limit))
	if err != nil {
		s.storeFailed(c, "search", err)
		return
	}
	c.PureJSON(http.StatusOK, viewMessages(s.withReactions(c.Request.Context(), trimNewestFirst(got, req.limit))))
}

// exportChannel serves GET /api/v1/channels/{name}/export: an oldest-first
// transcript of a public channel, as JSON or markdown.
func (s *Server) exportChannel(c *gin.Context) {
	format := strings.ToLower(c.DefaultQuery("format", "json"))
	if format != "json" && format != "markdown" && format != "md" {
		WriteError(c, http.StatusBadRequest, "Unknown format "+quoteParam(format)+"; use json or markdown")
		return
	}
	req, ok := parsePage(c, c.Param("name"), exportLimits)
	if !ok || !s.requireStore(c) || !s.withChannel(c, req.channel, publicOnly, nil) {
		return
	}
	msgs, err := s.pageByUnix(c.Request.Context(), req.channel, req.before, req.limit)
	if err != nil {
		s.storeFailed(c, "export", err)
		return
	}
	if format == "json" {
		c.PureJSON(http.StatusOK, viewMessages(s.withReactions(c.Request.Context(), msgs)))
		return
	}
	c.Data(http.StatusOK, "text/markdown; charset=utf-8", []byte(markdownTranscript(req.channel, msgs)))
}

// markdownTranscript renders messages as freeq's transcript: a title, then
// one list item per message, continuation lines indented four spaces.
func markdownTranscript(channel string, msgs []eventstore.Message) string {
	var b strings.Builder
	b.WriteString("# " + channel + " — exported transcript\n\n")
	for _, m := range msgs {
		nick := m.SenderNick
		if nick == "" {
			nick, _, _ = strings.Cut(m.Sender, "!")
		}
		msgid := m.MsgID
		if m.Revision != "" {
			msgid = m.Revision
		}
		b.WriteString("- `" + m.Time.UTC().Format(time.DateTime) + " UTC` **" + nick + "** (" + msgid + "): ")
		lines := strings.Split(strings.ReplaceAll(m.Text, "\r\n", "\n"), "\n")
		for i, line := range lines {
			if i > 0 {
				b.WriteString("\n    ")
			}
			b.WriteString(strings.TrimRight(line, "\r"))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// channelEvidence serves GET /api/v1/channels/{name}/evidence: a page of
// messages, oldest first, with the canonical bytes the server signed, as
// built by the configured EvidenceBuilder.
func (s *Server) channelEvidence(c *gin.Context) {
	req, ok := parsePage(c, c.Param("name"), evidenceLimits)
	if !ok || !s.requireStore(c) || !s.withChannel(c, req.channel, membersToo, nil) {
		return
	}
	ctx := c.Request.Context()
	msgs, err := s.pageByUnix(ctx, req.channel, req.before, req.limit)
	if err != nil {
		s.storeFailed(c, "evidence", err)
		return
	}
	bundle, err := s.cfg.Evidence.BuildEvidence(ctx, req.channel, msgs)
	if err != nil {
		s.logger.ErrorContext(ctx, "building evidence failed", "channel", req.channel, "err", err)
		WriteError(c, http.StatusInternalServerError, "The evidence bundle could not be built")
		return
	}
	c.Data(http.StatusOK, "application/json", bundle)
}

// quoteParam quotes a user-supplied value for an error message, cut short.
func quoteParam(v string) string {
	const maxShown = 64
	if len(v) > maxShown {
		v = v[:maxShown] + "…"
	}
	return `"` + strings.ToValidUTF8(v, "?") + `"`
}
