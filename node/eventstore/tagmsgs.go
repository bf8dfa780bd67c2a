package eventstore

import "context"

// TAGMSGs kept in history. A TAGMSG is stored like a message (a root of its venue, by its
// origin, exchanged with the other nodes and deduplicated by msgid) when the chat service keeps
// it: one that carries a client tag of the node's persist list (+draft/persist, +persist).
// It is an event, not a message: the Store's own views (Before, After, Latest, Between, Around,
// PageBeforeUnix, ExportAfter, ResumeAfter, Search), which the REST routes, export, MCP and the
// message history of IRC read, leave every TAGMSG root out. Playback reads the same history with
// them, for IRC clients that negotiated draft/event-playback. Limits count them as they count
// messages. The raw reads (Get, Root, Current) and the exchange's (OriginAfter) return them.

// Playback is the history of venues as a draft/event-playback reader reads it: the Store's views,
// TAGMSG roots included. Every other method is the Store's.
type Playback struct{ *Store }

// Playback returns the store's views that include kept TAGMSGs.
func (s *Store) Playback() Playback { return Playback{s} }

func (p Playback) events() view { return view{s: p.Store, tagmsgs: true} }

// Before is Store.Before, kept TAGMSGs included.
func (p Playback) Before(ctx context.Context, venue string, before Bound, limit int) ([]Message, error) {
	return p.events().before(ctx, venue, before, limit)
}

// After is Store.After, kept TAGMSGs included.
func (p Playback) After(ctx context.Context, venue string, after Bound, limit int) ([]Message, error) {
	return p.events().after(ctx, venue, after, limit)
}

// Latest is Store.Latest, kept TAGMSGs included.
func (p Playback) Latest(ctx context.Context, venue string, after Bound, limit int) ([]Message, error) {
	return p.events().latest(ctx, venue, after, limit)
}

// Between is Store.Between, kept TAGMSGs included.
func (p Playback) Between(ctx context.Context, venue string, a, b Bound, limit int) ([]Message, error) {
	return p.events().between(ctx, venue, a, b, limit)
}

// Around is Store.Around, kept TAGMSGs included.
func (p Playback) Around(ctx context.Context, venue string, center Bound, limit int) ([]Message, error) {
	return p.events().around(ctx, venue, center, limit)
}

// ResumeAfter is Store.ResumeAfter, kept TAGMSGs included.
func (p Playback) ResumeAfter(ctx context.Context, venue, msgid string, limit int) ([]Message, error) {
	return p.events().resumeAfter(ctx, venue, msgid, limit)
}

// ExportAfter is Store.ExportAfter, kept TAGMSGs included.
func (p Playback) ExportAfter(ctx context.Context, venue string, afterSeq int64, limit int) ([]Message, error) {
	return p.events().exportAfter(ctx, venue, afterSeq, limit)
}
