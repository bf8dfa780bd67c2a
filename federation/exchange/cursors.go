package exchange

import (
	"context"
	"fmt"
)

// Cursors: one scheme for every peer and every log. An origin keeps three durable logs (its
// messages and edits, its deletes, its reactions), each in its own order; a peer's position in
// one of them is a cursor, the last origin seq of that log it has. There are two kinds:
//
//   - in:<log>:<origin>: how far this node stored origin's log (a node of the cluster, pulled
//     and streamed by the exchange). It moves only after what it covers is stored here.
//   - out:<log>:<peer>: how far peer acknowledged this node's own log (a federated server, sent
//     by peering's outbox). It moves only over what the peer acknowledged.
//
// where <log> is messages, deletes or reactions, and <origin>/<peer> is a node name or a server
// DID. Earlier versions kept the same positions under other names (in: "<origin>",
// "del:<origin>", "react:<origin>"; out: "fed-out:<peer>", "fed-out-del:<peer>",
// "fed-out-react:<peer>"). Those rows stay readable: a cursor is read as the greater of its row
// and its former row (a cursor never moves back, and the former row is never written again), so
// a node that upgrades resumes where it was, and nothing is sent or stored twice for the rename.

// Log is one of an origin's durable logs.
type Log string

// The logs of an origin.
const (
	LogMessages  Log = "messages"
	LogDeletes   Log = "deletes"
	LogReactions Log = "reactions"
)

// Direction says whose position a cursor is.
type Direction string

// Directions.
const (
	In  Direction = "in"  // this node's copy of another origin's log
	Out Direction = "out" // a peer's acknowledgement of this node's log
)

// CursorKey names one cursor: a direction, a log, and the origin or peer.
type CursorKey struct {
	Dir  Direction
	Log  Log
	Peer string // the origin node's name (In) or the peer server's DID (Out)
}

// String is the key's row name in the store.
func (k CursorKey) String() string { return string(k.Dir) + ":" + string(k.Log) + ":" + k.Peer }

// legacy is the row name an earlier version used for the same position ("" when none).
func (k CursorKey) legacy() string {
	switch k.Dir {
	case In:
		switch k.Log {
		case LogMessages:
			return k.Peer
		case LogDeletes:
			return "del:" + k.Peer
		case LogReactions:
			return "react:" + k.Peer
		}
	case Out:
		switch k.Log {
		case LogMessages:
			return "fed-out:" + k.Peer
		case LogDeletes:
			return "fed-out-del:" + k.Peer
		case LogReactions:
			return "fed-out-react:" + k.Peer
		}
	}
	return ""
}

// CursorStore is where cursors are kept (the event store's cursor table).
type CursorStore interface {
	Cursor(ctx context.Context, name string) (int64, error)
	SetCursor(ctx context.Context, name string, seq int64) error
}

// ReadCursor reads a cursor: the greater of its row and the row an earlier version kept it in.
func ReadCursor(ctx context.Context, st CursorStore, k CursorKey) (int64, error) {
	seq, err := st.Cursor(ctx, k.String())
	if err != nil {
		return 0, fmt.Errorf("cursor %s: %w", k, err)
	}
	if old := k.legacy(); old != "" {
		prev, err := st.Cursor(ctx, old)
		if err != nil {
			return 0, fmt.Errorf("cursor %s (former row %s): %w", k, old, err)
		}
		seq = max(seq, prev)
	}
	return seq, nil
}

// WriteCursor durably moves a cursor forward (never back).
func WriteCursor(ctx context.Context, st CursorStore, k CursorKey, seq int64) error {
	if err := st.SetCursor(ctx, k.String(), seq); err != nil {
		return fmt.Errorf("cursor %s: %w", k, err)
	}
	return nil
}

// inCursor is this node's cursor over origin's log.
func inCursor(origin string, l Log) CursorKey { return CursorKey{Dir: In, Log: l, Peer: origin} }
