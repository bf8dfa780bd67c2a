package node

import (
	"context"
	"net/http"

	"github.com/palaver-chat/palaver/gateway/irc"
	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/stream"
)

// The points where Faults.PanicAt can make the node panic, one per loop that must survive it.
const (
	// PanicRender: the IRC edge rendering an applied entry's events (its Applied subscriber).
	PanicRender = "render"
	// PanicHistoryRead: the IRC edge reading history on a connection's goroutine (JOIN replay,
	// CHATHISTORY).
	PanicHistoryRead = "history-read"
	// PanicHistoryAppend: the IRC edge storing messages (a connection's pipeline worker).
	PanicHistoryAppend = "history-append"
	// PanicExchangePush: the event exchange sending a batch to a peer (a stream's frame of
	// messages, or a pushed batch of reactions and TAGMSGs).
	PanicExchangePush = "exchange-push"
	// PanicExchangePull: the event exchange's pull loop asking a peer for its events.
	PanicExchangePull = "exchange-pull"
	// PanicExchangeDeliver: the IRC edge delivering a message stored from a cluster peer (its
	// Stored subscriber).
	PanicExchangeDeliver = "exchange-deliver"
	// PanicFederationSend: a federation outbox sending an envelope to a peer server.
	PanicFederationSend = "federation-send"
	// PanicFederationApply: the IRC edge delivering a message accepted from a peer server.
	PanicFederationApply = "federation-apply"
)

func (f *Faults) panicAt(point string) bool {
	return f.PanicAt != nil && f.PanicAt(point)
}

// streams makes the IRC edge's render of applied entries (PanicRender) and its delivery of a
// message stored from a cluster peer (PanicExchangeDeliver) or a peer server
// (PanicFederationApply) panic when PanicAt says so (no hooks without PanicAt).
func (f *Faults) streams() (applied func(string, stream.Entry), stored func(string, stream.Item)) {
	if f.PanicAt == nil {
		return nil, nil
	}
	applied = func(sub string, e stream.Entry) {
		if sub == "irc" && !e.Resync && f.panicAt(PanicRender) {
			panic("fault injection: render")
		}
	}
	stored = func(sub string, it stream.Item) {
		if sub != "irc" || it.Kind != stream.KindMessage {
			return
		}
		point := PanicExchangeDeliver
		if it.Source == stream.Federation {
			point = PanicFederationApply
		}
		if f.panicAt(point) {
			panic("fault injection: " + point)
		}
	}
	return applied, stored
}

// eventHistory is the event store as the IRC edge reads it and the chat service writes it.
type eventHistory interface {
	irc.History
	chat.Store
}

// history is the event store as the IRC edge and the chat service use it, panicking where
// PanicAt says so.
func (f *Faults) history(h *eventstore.Store) eventHistory {
	if f.PanicAt == nil {
		return h
	}
	return &panickyHistory{Store: h, f: f}
}

type panickyHistory struct {
	*eventstore.Store
	f *Faults
}

func (p *panickyHistory) Append(ctx context.Context, msgs ...*eventstore.Message) error {
	if p.f.panicAt(PanicHistoryAppend) {
		panic("fault injection: history append")
	}
	return p.Store.Append(ctx, msgs...)
}

func (p *panickyHistory) Latest(ctx context.Context, venue string, after eventstore.Bound, limit int) ([]eventstore.Message, error) {
	if p.f.panicAt(PanicHistoryRead) {
		panic("fault injection: history read")
	}
	return p.Store.Latest(ctx, venue, after, limit)
}

// exchange is the event exchange's client, whose pushes (PanicExchangePush) and pulls
// (PanicExchangePull) panic where PanicAt says so, and its hook run before it sends a frame of
// messages on a stream (PanicExchangePush).
func (f *Faults) exchange(c *http.Client) (*http.Client, func()) {
	if f.PanicAt == nil {
		return c, nil
	}
	return f.client(c, exchangePoint), func() {
		if f.panicAt(PanicExchangePush) {
			panic("fault injection: " + PanicExchangePush)
		}
	}
}

// federation is federation's client, whose outboxes' envelopes (PanicFederationSend) panic where
// PanicAt says so.
func (f *Faults) federation(c *http.Client) *http.Client { return f.client(c, federationPoint) }

// client is c, whose requests panic in the goroutine that makes them when point names a point
// for them (nil: none) and PanicAt says so.
func (f *Faults) client(c *http.Client, point func(*http.Request) string) *http.Client {
	if f.PanicAt == nil || c == nil {
		return c
	}
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	out := *c
	out.Transport = roundTripper(func(r *http.Request) (*http.Response, error) {
		if p := point(r); p != "" && f.panicAt(p) {
			panic("fault injection: " + p)
		}
		return base.RoundTrip(r)
	})
	return &out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (rt roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return rt(r) }

// exchangePoint names the point of an event exchange request: a push or a pull.
func exchangePoint(r *http.Request) string {
	switch {
	case r.URL.Path != "/internal/v1/events":
		return ""
	case r.Method == http.MethodPost:
		return PanicExchangePush
	default:
		return PanicExchangePull
	}
}

// federationPoint names the point of a federation request: an outbox's envelope.
func federationPoint(r *http.Request) string {
	if r.Method == http.MethodPost && r.URL.Path == "/federation/v1/events" {
		return PanicFederationSend
	}
	return ""
}
