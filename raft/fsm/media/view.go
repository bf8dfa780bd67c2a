package media

import (
	"encoding/json"
	"sort"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// View reads the media module's state: each method returns copies, never references into the
// state. Get it with Of inside Machine.Read; it is valid during that callback only.
type View struct {
	st *fsm.State
	m  *MediaState
}

// Of is the media view of st.
func Of(st *fsm.State) View { return View{st, section.Of(st)} }

// Key is the capability key, nil until one is installed.
func (v View) Key() []byte {
	if v.m == nil {
		return nil
	}
	return append([]byte(nil), v.m.Key...)
}

// Object returns an upload's metadata.
func (v View) Object(id string) (MediaObject, bool) {
	if v.m == nil || v.m.Objects[id] == nil {
		return MediaObject{}, false
	}
	return *v.m.Objects[id], true
}

// Usage is the bytes recorded for an uploader.
func (v View) Usage(did string) int64 {
	if v.m == nil {
		return 0
	}
	var total int64
	for _, o := range v.m.Objects {
		if o.Uploader == did {
			total += o.Size
		}
	}
	return total
}

// PreKeyBundle returns a DID's pre-key bundle.
func (v View) PreKeyBundle(did string) (json.RawMessage, bool) {
	if v.m == nil {
		return nil, false
	}
	b, ok := v.m.Bundles[did]
	return append(json.RawMessage(nil), b...), ok
}

// GroupKeysFor lists the sealed group keys of a channel (folded name) addressed to did, newest
// epoch first; keys written for an earlier incarnation of the channel are not returned.
func (v View) GroupKeysFor(channel, did string) []SealedKey {
	ch, ok := v.st.Channel(channel)
	if v.m == nil || !ok {
		return nil
	}
	ring := v.m.GroupKeys[channel]
	if ring == nil || ring.Incarnation != ch.Incarnation() {
		return nil
	}
	return ring.sealedFor(did)
}

// SpaceOf returns a channel's media space (folded name), if it has one in its current
// incarnation.
func (v View) SpaceOf(channel string) (MediaSpace, bool) {
	ch, ok := v.st.Channel(channel)
	if v.m == nil || !ok {
		return MediaSpace{}, false
	}
	sp := v.m.Spaces[channel]
	if sp == nil || sp.Incarnation != ch.Incarnation() {
		return MediaSpace{}, false
	}
	return *sp, true
}

// SpaceByRef finds the channel (folded name) whose current media space has ref.
func (v View) SpaceByRef(ref string) (channel string, ok bool) {
	if v.m == nil {
		return "", false
	}
	for name, sp := range v.m.Spaces {
		if sp.Ref == ref {
			if ch, ok := v.st.Channel(name); ok && ch.Incarnation() == sp.Incarnation {
				return name, true
			}
		}
	}
	return "", false
}

// SpaceCount is the number of media spaces the server holds.
func (v View) SpaceCount() int {
	if v.m == nil {
		return 0
	}
	return len(v.m.Spaces)
}

// ObjectsHeldBy lists the uploads node holds a copy of, by id.
func (v View) ObjectsHeldBy(node string) []MediaObject {
	if v.m == nil {
		return nil
	}
	var out []MediaObject
	for _, o := range v.m.Objects {
		if o.HeldBy(node) {
			out = append(out, *o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Total is the bytes of every upload recorded.
func (v View) Total() int64 {
	if v.m == nil {
		return 0
	}
	if v.m.totalKnown { // derived by Apply, which holds the write lock
		return v.m.total
	}
	var total int64
	for _, o := range v.m.Objects {
		total += o.Size
	}
	return total
}

// Objects lists every upload, by id.
func (v View) Objects() []MediaObject {
	if v.m == nil {
		return nil
	}
	out := make([]MediaObject, 0, len(v.m.Objects))
	for _, o := range v.m.Objects {
		out = append(out, *o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
