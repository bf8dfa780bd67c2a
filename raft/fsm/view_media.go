package fsm

import (
	"encoding/json"
	"sort"
)

// Reads of the media state and of the channel facts the media routes need, for callers outside
// this package. Each returns copies.

// MediaKey is the capability key, nil until one is installed.
func (s *State) MediaKey() []byte {
	if s.media == nil {
		return nil
	}
	return append([]byte(nil), s.media.Key...)
}

// MediaObject returns an upload's metadata.
func (s *State) MediaObject(id string) (MediaObject, bool) {
	if s.media == nil || s.media.Objects[id] == nil {
		return MediaObject{}, false
	}
	return *s.media.Objects[id], true
}

// MediaUsage is the bytes recorded for an uploader.
func (s *State) MediaUsage(did string) int64 {
	if s.media == nil {
		return 0
	}
	var total int64
	for _, o := range s.media.Objects {
		if o.Uploader == did {
			total += o.Size
		}
	}
	return total
}

// PreKeyBundle returns a DID's pre-key bundle.
func (s *State) PreKeyBundle(did string) (json.RawMessage, bool) {
	if s.media == nil {
		return nil, false
	}
	b, ok := s.media.Bundles[did]
	return append(json.RawMessage(nil), b...), ok
}

// GroupKeysFor lists the sealed group keys of a channel (folded name) addressed to did, newest
// epoch first; keys written for an earlier incarnation of the channel are not returned.
func (s *State) GroupKeysFor(channel, did string) []SealedKey {
	ch := s.channels[channel]
	if s.media == nil || ch == nil {
		return nil
	}
	ring := s.media.GroupKeys[channel]
	if ring == nil || ring.Incarnation != ch.Incarnation {
		return nil
	}
	return ring.sealedFor(did)
}

// MediaSpaceOf returns a channel's media space (folded name), if it has one in its current
// incarnation.
func (s *State) MediaSpaceOf(channel string) (MediaSpace, bool) {
	ch := s.channels[channel]
	if s.media == nil || ch == nil {
		return MediaSpace{}, false
	}
	sp := s.media.Spaces[channel]
	if sp == nil || sp.Incarnation != ch.Incarnation {
		return MediaSpace{}, false
	}
	return *sp, true
}

// MediaSpaceByRef finds the channel (folded name) whose current media space has ref.
func (s *State) MediaSpaceByRef(ref string) (channel string, ok bool) {
	if s.media == nil {
		return "", false
	}
	for name, sp := range s.media.Spaces {
		if sp.Ref == ref {
			if ch := s.channels[name]; ch != nil && ch.Incarnation == sp.Incarnation {
				return name, true
			}
		}
	}
	return "", false
}

// ChannelAccess is what a DID may do with a channel.
type ChannelAccess struct {
	Exists bool
	// Restricted: +i, +k, +E or +s (not discoverable).
	Restricted bool
	// Member: the DID has a session in the channel now.
	Member bool
	// Manager: the DID is the channel's founder or a DID op.
	Manager bool
}

// ChannelAccessOf answers ChannelAccess for a channel (folded name) and a DID ("" anonymous).
func (s *State) ChannelAccessOf(channel, did string) ChannelAccess {
	ch := s.channels[channel]
	if ch == nil {
		return ChannelAccess{}
	}
	acc := ChannelAccess{Exists: true, Restricted: !ch.Discoverable()}
	if did == "" {
		return acc
	}
	acc.Manager = did == ch.FounderDID || ch.didOps[did]
	for id := range ch.members {
		if se := s.sessions[id]; se != nil && se.DID == did {
			acc.Member = true
			break
		}
	}
	return acc
}

// MediaSpaceCount is the number of media spaces the server holds.
func (s *State) MediaSpaceCount() int {
	if s.media == nil {
		return 0
	}
	return len(s.media.Spaces)
}

// MediaObjectsHeldBy lists the uploads node holds a copy of, by id.
func (s *State) MediaObjectsHeldBy(node string) []MediaObject {
	if s.media == nil {
		return nil
	}
	var out []MediaObject
	for _, o := range s.media.Objects {
		if o.HeldBy(node) {
			out = append(out, *o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// MediaTotal is the bytes of every upload recorded.
func (s *State) MediaTotal() int64 {
	if s.media == nil {
		return 0
	}
	if s.media.totalKnown { // derived by Apply, which holds the write lock
		return s.media.total
	}
	var total int64
	for _, o := range s.media.Objects {
		total += o.Size
	}
	return total
}

// MediaObjects lists every upload, by id.
func (s *State) MediaObjects() []MediaObject {
	if s.media == nil {
		return nil
	}
	out := make([]MediaObject, 0, len(s.media.Objects))
	for _, o := range s.media.Objects {
		out = append(out, *o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
