package assist

import (
	"sync"

	"github.com/palaver-chat/palaver/gateway/irc"
)

// Bounds of the disconnect record.
const (
	// MaxDisconnectsPerDID is how many recent disconnects are kept per DID.
	MaxDisconnectsPerDID = 16
	// MaxDisconnectDIDs is how many DIDs are kept; the one whose last disconnect is oldest goes
	// first.
	MaxDisconnectDIDs = 4096
)

// Disconnects is this node's in-memory record of the recent disconnects of authenticated users,
// bounded per DID and in DIDs. It implements irc.DisconnectRecorder. Guests are not recorded: the
// tools ask by DID.
type Disconnects struct {
	mu    sync.Mutex
	byDID map[string][]irc.Disconnect // oldest first
	order []string                    // DIDs, least recently recorded first
}

// NewDisconnects makes an empty record.
func NewDisconnects() *Disconnects {
	return &Disconnects{byDID: map[string][]irc.Disconnect{}}
}

// RecordDisconnect files a disconnect.
func (r *Disconnects) RecordDisconnect(d irc.Disconnect) {
	if d.DID == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	list, known := r.byDID[d.DID]
	list = append(list, d)
	if len(list) > MaxDisconnectsPerDID {
		list = append(list[:0:0], list[len(list)-MaxDisconnectsPerDID:]...)
	}
	r.byDID[d.DID] = list
	if known {
		for i, did := range r.order {
			if did == d.DID {
				r.order = append(r.order[:i], r.order[i+1:]...)
				break
			}
		}
	}
	r.order = append(r.order, d.DID)
	for len(r.order) > MaxDisconnectDIDs {
		delete(r.byDID, r.order[0])
		r.order = r.order[1:]
	}
}

// For returns did's recorded disconnects, newest first.
func (r *Disconnects) For(did string) []irc.Disconnect {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	list := r.byDID[did]
	out := make([]irc.Disconnect, len(list))
	for i, d := range list {
		out[len(list)-1-i] = d
	}
	return out
}
