package exchange

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/node/eventstore"
)

// Channel events (IRC event playback) a node did not file itself. Every node files the JOIN,
// PART, MODE, TOPIC ... lines of the entries it applies, under ids derived from the entry, so
// every node holds the same rows; but a node files nothing for the entries it applied before its
// edge began filing (Raft catches up first: for a node that joined later, the whole log) nor for
// those a snapshot replaced. Config.EventsGap names the last such entry; the exchange then asks
// its peers for their events through it, page by page in log order, and files them (filing is
// idempotent), until a peer has answered every page. Peers answer from their own rows
// (GET /internal/v1/channel-events, signed both ways like a pull).

const channelEventsPath = "/internal/v1/channel-events"

// EventStore is the event store's channel events as the exchange serves and files them
// (*eventstore.Store implements it).
type EventStore interface {
	EventsThrough(ctx context.Context, after eventstore.EventKey, through uint64, limit int) ([]eventstore.ChannelEvent, error)
	FileChannelEvents(ctx context.Context, evs []eventstore.ChannelEvent) error
}

// eventsPage is one answer of a peer: its events after the asked key, in log order.
type eventsPage struct {
	Events []channelEvent `json:"events"`
}

// channelEvent is a channel event on the wire.
type channelEvent struct {
	Venue   string   `json:"venue"`
	MsgID   string   `json:"msgid"`
	TimeMS  int64    `json:"time_ms"`
	Index   uint64   `json:"index"`
	Command string   `json:"command"`
	Source  string   `json:"source"`
	Account string   `json:"account,omitempty"`
	Params  []string `json:"params"`
}

func channelEventOf(e eventstore.ChannelEvent) channelEvent {
	return channelEvent{Venue: e.Venue, MsgID: e.MsgID, TimeMS: e.Time.UnixMilli(), Index: e.Index, Command: e.Command,
		Source: e.Source, Account: e.Account, Params: e.Params}
}

func (e channelEvent) event() eventstore.ChannelEvent {
	return eventstore.ChannelEvent{Venue: e.Venue, MsgID: e.MsgID, Time: time.UnixMilli(e.TimeMS).UTC(), Index: e.Index,
		Command: e.Command, Source: e.Source, Account: e.Account, Params: e.Params}
}

// serveChannelEvents answers a cluster node's request for this node's channel events through an
// index, after a key.
func (x *Exchange) serveChannelEvents(c *gin.Context) {
	if _, ok := x.signedGet(c); !ok {
		return
	}
	if x.cfg.Events == nil {
		c.JSON(http.StatusServiceUnavailable, gin.H{"error": "this node keeps no channel events"})
		return
	}
	through, err1 := strconv.ParseUint(c.Query("through"), 10, 64)
	afterIndex, err2 := strconv.ParseUint(c.DefaultQuery("after_index", "0"), 10, 64)
	limit, err3 := strconv.Atoi(c.DefaultQuery("limit", strconv.Itoa(x.cfg.PageSize)))
	if err1 != nil || err2 != nil || err3 != nil || limit < 1 {
		c.JSON(http.StatusBadRequest, gin.H{"error": "through and after_index must be integers ≥ 0, limit a positive integer"})
		return
	}
	after := eventstore.EventKey{Index: afterIndex, Venue: c.Query("after_venue"), MsgID: c.Query("after_msgid")}
	evs, err := x.cfg.Events.EventsThrough(c.Request.Context(), after, through, min(limit, x.cfg.PageSize))
	if err != nil {
		c.JSON(http.StatusServiceUnavailable, gin.H{"error": "store unavailable"})
		return
	}
	page := eventsPage{Events: make([]channelEvent, 0, len(evs))}
	for _, e := range evs {
		page.Events = append(page.Events, channelEventOf(e))
	}
	x.answerSigned(c, page)
}

// fillEvents files the channel events this node did not file itself, from its peers, whenever
// Config.EventsGap moves past what was filled; it retries every PullEvery until done.
func (x *Exchange) fillEvents() {
	defer x.wg.Done()
	t := time.NewTicker(x.cfg.PullEvery)
	defer t.Stop()
	var filled uint64
	for {
		if gap := x.cfg.EventsGap(); gap > filled {
			err := x.FillChannelEvents(x.ctx, gap)
			if err == nil {
				filled = gap
			} else if x.ctx.Err() == nil {
				x.cfg.Logger.Debug("filling channel events from the peers", "through", gap, "err", err)
			}
		}
		select {
		case <-x.ctx.Done():
			return
		case <-t.C:
		case <-x.eventsKick:
		}
	}
}

// FillChannelEvents asks every peer for its channel events of the entries at or before through
// and files them, so that what any of them holds is filed here (a peer may lack some itself, until
// its own fill). It succeeds when at least one peer answered every page.
func (x *Exchange) FillChannelEvents(ctx context.Context, through uint64) error {
	if x.cfg.Events == nil || x.cfg.Peers == nil {
		return nil
	}
	var errs []string
	answered := false
	for _, p := range x.cfg.Peers() {
		if err := x.fillFrom(ctx, p, through); err != nil {
			errs = append(errs, p.DID+": "+err.Error())
			continue
		}
		answered = true
	}
	switch {
	case answered:
		return nil
	case len(errs) == 0:
		return fmt.Errorf("channel events through %d: no peer to ask", through)
	}
	return fmt.Errorf("channel events through %d: %s", through, strings.Join(errs, "; "))
}

// fillFrom files p's channel events through an index, page by page.
func (x *Exchange) fillFrom(ctx context.Context, p Peer, through uint64) error {
	var after eventstore.EventKey
	for {
		q := url.Values{"through": {strconv.FormatUint(through, 10)}, "after_index": {strconv.FormatUint(after.Index, 10)},
			"after_venue": {after.Venue}, "after_msgid": {after.MsgID}, "limit": {strconv.Itoa(x.cfg.PageSize)}}
		pathQuery := channelEventsPath + "?" + q.Encode()
		body, err := x.getSigned(ctx, p, pathQuery)
		if err != nil {
			return err
		}
		var page eventsPage
		if err := json.Unmarshal(body, &page); err != nil {
			return fmt.Errorf("malformed channel events from %s: %w", p.DID, err)
		}
		evs := make([]eventstore.ChannelEvent, 0, len(page.Events))
		for _, w := range page.Events {
			e := w.event()
			if e.Index > through || !keyAfter(e.Key(), after) || !strings.HasPrefix(e.Venue, "#") && !strings.HasPrefix(e.Venue, "&") {
				return fmt.Errorf("%s answered a channel event out of order or range: %s in %q at %d", p.DID, e.MsgID, e.Venue, e.Index)
			}
			evs = append(evs, e)
			after = e.Key()
		}
		if err := x.cfg.Events.FileChannelEvents(ctx, evs); err != nil {
			return err
		}
		if len(evs) == 0 {
			return nil
		}
	}
}

// keyAfter reports whether a comes after b in log order.
func keyAfter(a, b eventstore.EventKey) bool {
	switch {
	case a.Index != b.Index:
		return a.Index > b.Index
	case a.Venue != b.Venue:
		return a.Venue > b.Venue
	}
	return a.MsgID > b.MsgID
}
