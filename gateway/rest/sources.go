package rest

import (
	"context"

	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// StateReader gives read-locked access to the node's replica of the
// replicated state; *fsm.Machine is one. The callback must not keep
// references into the state after it returns.
type StateReader interface {
	Read(func(*fsm.State))
}

// EventStore is the part of the message store the read routes use;
// *eventstore.Store is one. Views return roots in their current (edited)
// form and leave deleted messages out.
type EventStore interface {
	// PageBeforeUnix returns the newest limit messages of venue strictly
	// before a unix second (0 = no bound), oldest first.
	PageBeforeUnix(ctx context.Context, venue string, beforeUnix int64, limit int) ([]eventstore.Message, error)
	// Before returns the newest limit messages of venue strictly before a
	// bound (a msgid here), oldest first.
	Before(ctx context.Context, venue string, before eventstore.Bound, limit int) ([]eventstore.Message, error)
	// Search returns venue's messages holding every term of query, newest
	// first, strictly before a unix second (0 = no bound).
	Search(ctx context.Context, venue, query string, beforeUnix int64, limit int) ([]eventstore.Message, error)
	// Get returns the row stored under msgid as stored, deleted or not.
	Get(ctx context.Context, msgid string) (eventstore.Message, error)
	// Current returns the root of msgid in its current form; ErrNotFound
	// when unknown or deleted.
	Current(ctx context.Context, msgid string) (eventstore.Message, error)
}

// DIDResolver resolves a DID to its document; *keyresolver.Resolver is one.
type DIDResolver interface {
	Resolve(ctx context.Context, did string) (*keyresolver.Document, error)
}

// EvidenceBuilder turns a page of a channel's stored messages into the
// signed evidence bundle served by GET /api/v1/channels/{name}/evidence:
// the canonical bytes the server signed for each message, the keys and the
// bundle signature. The REST layer has already checked read access and
// applied paging; messages are oldest first, in their stored (current) form.
type EvidenceBuilder interface {
	BuildEvidence(ctx context.Context, channel string, messages []eventstore.Message) (bundle []byte, err error)
}

// emptyState stands in for a missing StateReader: a state with nothing in it.
type emptyState struct{}

func (emptyState) Read(f func(*fsm.State)) { f(fsm.NewState()) }
