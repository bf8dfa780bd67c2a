package fsm

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/palaver-chat/palaver/gateway/coord/act"
)

// Read methods of the coordination models for the gateways: each returns copies, never
// references into the state.

// VenueReadable reports whether a reader known by DID ("" = anonymous) may read what happens in
// a venue: a channel as history's read rule says (found is false for a channel that does not
// exist), a DM venue ("dm:<did>,<did>") only for its two participants.
func (s *State) VenueReadable(venue, did string) (found, readable bool) {
	if pair, ok := strings.CutPrefix(venue, "dm:"); ok {
		a, b, _ := strings.Cut(pair, ",")
		return true, did != "" && (did == a || did == b)
	}
	ch := s.channels[venue]
	if ch == nil {
		return false, false
	}
	return true, s.MayRead(ch, did)
}

// ChannelExists reports whether a channel (folded name) exists.
func (s *State) ChannelExists(name string) bool { return s.channels[name] != nil }

// IsChannelOpDID reports whether did may act as an operator of a channel: its founder, a DID op,
// or the DID of a session that is a channel op or a server operator.
func (s *State) IsChannelOpDID(channel, did string) bool {
	ch := s.channels[channel]
	if ch == nil {
		return false
	}
	a := applier{st: s}
	return a.didIsChannelOp(ch, did)
}

// IsChannelMemberDID reports whether a session of did is a member of a channel.
func (s *State) IsChannelMemberDID(channel, did string) bool {
	ch := s.channels[channel]
	if ch == nil || did == "" {
		return false
	}
	for _, se := range s.SessionsByDID(did) {
		if ch.members[se.ID] != nil {
			return true
		}
	}
	return false
}

func cloneAction(a *ActAction) ActAction {
	out := *a
	out.Bids = maps.Clone(a.Bids)
	out.Events = make([]ActEvent, len(a.Events))
	for i, e := range a.Events {
		e.Fields = maps.Clone(e.Fields)
		if e.Receipt != nil {
			r := *e.Receipt
			e.Receipt = &r
		}
		out.Events[i] = e
	}
	return out
}

// CoordActions returns the actions keep accepts, most recently updated first, at most limit.
func (s *State) CoordActions(keep func(*ActAction) bool, limit int) []ActAction {
	if s.coord == nil {
		return nil
	}
	var picked []*ActAction
	for _, a := range s.coord.Actions {
		if keep(a) {
			picked = append(picked, a)
		}
	}
	sort.Slice(picked, func(i, j int) bool {
		if picked[i].Updated != picked[j].Updated {
			return picked[i].Updated > picked[j].Updated
		}
		return picked[i].ID > picked[j].ID
	})
	if len(picked) > limit {
		picked = picked[:limit]
	}
	out := make([]ActAction, len(picked))
	for i, a := range picked {
		out[i] = cloneAction(a)
	}
	return out
}

// CoordAction returns one action.
func (s *State) CoordAction(id string) (ActAction, bool) {
	if s.coord == nil || s.coord.Actions[id] == nil {
		return ActAction{}, false
	}
	return cloneAction(s.coord.Actions[id]), true
}

// CoordActEventAction returns the action an act event id was filed on.
func (s *State) CoordActEventAction(eventID string) (string, bool) {
	if s.coord == nil {
		return "", false
	}
	id, ok := s.coord.ActEvents[eventID]
	return id, ok
}

// CoordTask returns one delegated task.
func (s *State) CoordTask(id string) (CoordTask, bool) {
	if s.coord == nil || s.coord.Tasks[id] == nil {
		return CoordTask{}, false
	}
	t := *s.coord.Tasks[id]
	t.Events, t.Evidence = slices.Clone(t.Events), slices.Clone(t.Evidence)
	return t, true
}

// CoordManifests returns every manifest, newest first.
func (s *State) CoordManifests() []AgentManifest {
	out := []AgentManifest{}
	if s.coord == nil {
		return out
	}
	for _, m := range s.coord.Manifests {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].RegisteredAt != out[j].RegisteredAt {
			return out[i].RegisteredAt > out[j].RegisteredAt
		}
		return out[i].AgentDID < out[j].AgentDID
	})
	return out
}

// CoordManifest returns one agent's manifest.
func (s *State) CoordManifest(did string) (AgentManifest, bool) {
	if s.coord == nil || s.coord.Manifests[did] == nil {
		return AgentManifest{}, false
	}
	return *s.coord.Manifests[did], true
}

// CoordSpawned returns the spawned agents, newest first.
func (s *State) CoordSpawned() []SpawnedAgent {
	out := []SpawnedAgent{}
	if s.coord == nil {
		return out
	}
	for _, a := range s.coord.Spawned {
		c := *a
		c.Capabilities = slices.Clone(a.Capabilities)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].SpawnedAt != out[j].SpawnedAt {
			return out[i].SpawnedAt > out[j].SpawnedAt
		}
		return out[i].ChildDID < out[j].ChildDID
	})
	return out
}

// CoordSpawn returns the spawn record of a child DID.
func (s *State) CoordSpawn(did string) (SpawnedAgent, bool) {
	if s.coord == nil || s.coord.Spawned[did] == nil {
		return SpawnedAgent{}, false
	}
	a := *s.coord.Spawned[did]
	a.Capabilities = slices.Clone(a.Capabilities)
	return a, true
}

// CoordCapabilities returns a channel's grants that have not expired at unix ms now.
func (s *State) CoordCapabilities(channel string, now int64) []CapabilityGrant {
	out := []CapabilityGrant{}
	if s.coord == nil {
		return out
	}
	for _, g := range s.coord.Capabilities[channel] {
		if g.ExpiresAt == 0 || g.ExpiresAt > now {
			out = append(out, *g)
		}
	}
	return out
}

// CoordApprovals returns a channel's approvals, oldest first.
func (s *State) CoordApprovals(channel string) []Approval {
	out := []Approval{}
	if s.coord == nil {
		return out
	}
	for _, a := range s.coord.Approvals[channel] {
		out = append(out, *a)
	}
	return out
}

// CoordActor returns the actor record of a DID.
func (s *State) CoordActor(did string) (ActorRecord, bool) {
	if s.coord == nil || s.coord.Actors[did] == nil {
		return ActorRecord{}, false
	}
	r := *s.coord.Actors[did]
	if r.Provenance != nil {
		p := *r.Provenance
		r.Provenance = &p
	}
	if r.Presence != nil {
		p := *r.Presence
		r.Presence = &p
	}
	if r.Heartbeat != nil {
		h := *r.Heartbeat
		r.Heartbeat = &h
	}
	return r, true
}

// CoordTimeline returns a venue's timeline items keep accepts, newest first, at most limit.
func (s *State) CoordTimeline(venue string, keep func(*TimelineItem) bool, limit int) []TimelineItem {
	out := []TimelineItem{}
	if s.coord == nil {
		return out
	}
	list := s.coord.Timeline[venue]
	for i := len(list) - 1; i >= 0 && len(out) < limit; i-- {
		if keep(&list[i]) {
			it := list[i]
			it.Details = maps.Clone(it.Details)
			out = append(out, it)
		}
	}
	return out
}

// SigningKeysOf returns copies of the public keys filed under did.
func (s *State) SigningKeysOf(did string) []KeyRecord {
	var out []KeyRecord
	for _, k := range s.keys[did] {
		c := *k
		c.PublicKey = slices.Clone(k.PublicKey)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].KID < out[j].KID })
	return out
}

// JudgeAct answers the result code filing an act event would get now, without filing it: what a
// gateway checks before it relays the event. The log may still refuse it (another event won a
// race).
func (s *State) JudgeAct(venue, eventID, from string, fields map[string]string) Code {
	return judgeAct(s.coord, venue, act.Event{ID: eventID, Sender: from, Fields: fields}).Code
}

// CoordDigest is the SHA-256 of the coordination state's encoding: equal on replicas holding the
// same models, and unchanged by a refused command.
func (s *State) CoordDigest() [32]byte {
	data, err := json.Marshal(s.coord)
	if err != nil { // cannot happen for these types; make it visible rather than silent
		panic(fmt.Sprintf("fsm: coordination digest: %v", err))
	}
	return sha256.Sum256(data)
}
