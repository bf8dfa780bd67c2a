package node

import (
	"context"

	"github.com/palaver-chat/palaver/federation/eventstore"
	"github.com/palaver-chat/palaver/gateway/irc"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// The points where Faults.PanicAt can make the node panic, one per loop that must survive it.
const (
	// PanicRender: rendering an applied entry's events (the render queue's goroutine).
	PanicRender = "render"
	// PanicHistoryRead: the IRC edge reading history on a connection's goroutine (JOIN replay,
	// CHATHISTORY).
	PanicHistoryRead = "history-read"
	// PanicHistoryAppend: the IRC edge storing messages (a connection's pipeline worker).
	PanicHistoryAppend = "history-append"
)

func (f *Faults) panicAt(point string) bool {
	return f != nil && f.PanicAt != nil && f.PanicAt(point)
}

// render is the render queue's renderer: r, panicking first when PanicAt says so.
func (f *Faults) render(r func(uint64, []fsm.Event)) func(uint64, []fsm.Event) {
	if f == nil || f.PanicAt == nil {
		return r
	}
	return func(index uint64, events []fsm.Event) {
		if f.panicAt(PanicRender) {
			panic("fault injection: render")
		}
		r(index, events)
	}
}

// ircHistory is the event store as the IRC edge uses it, panicking where PanicAt says so.
func (f *Faults) ircHistory(h *eventstore.Store) irc.History {
	if f == nil || f.PanicAt == nil {
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
