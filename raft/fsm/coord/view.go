package coord

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/coord/act"
)

// View reads the coordination models of a state for the gateways: each method returns copies,
// never references into the state. Get it with Of inside Machine.Read; it is valid during that
// callback only.
type View struct{ c *Coord }

// Of is the coordination view of st.
func Of(st *fsm.State) View { return View{section.Of(st)} }

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

// Actions returns the actions keep accepts, most recently updated first, at most limit.
func (v View) Actions(keep func(*ActAction) bool, limit int) []ActAction {
	if v.c == nil {
		return nil
	}
	var picked []*ActAction
	for _, a := range v.c.Actions {
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

// Action returns one action.
func (v View) Action(id string) (ActAction, bool) {
	if v.c == nil || v.c.Actions[id] == nil {
		return ActAction{}, false
	}
	return cloneAction(v.c.Actions[id]), true
}

// ActEventAction returns the action an act event id was filed on.
func (v View) ActEventAction(eventID string) (string, bool) {
	if v.c == nil {
		return "", false
	}
	id, ok := v.c.ActEvents[eventID]
	return id, ok
}

// Task returns one delegated task.
func (v View) Task(id string) (CoordTask, bool) {
	if v.c == nil || v.c.Tasks[id] == nil {
		return CoordTask{}, false
	}
	t := *v.c.Tasks[id]
	t.Events, t.Evidence = slices.Clone(t.Events), slices.Clone(t.Evidence)
	return t, true
}

// Manifests returns every manifest, newest first.
func (v View) Manifests() []AgentManifest {
	out := []AgentManifest{}
	if v.c == nil {
		return out
	}
	for _, m := range v.c.Manifests {
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

// Manifest returns one agent's manifest.
func (v View) Manifest(did string) (AgentManifest, bool) {
	if v.c == nil || v.c.Manifests[did] == nil {
		return AgentManifest{}, false
	}
	return *v.c.Manifests[did], true
}

// Spawned returns the spawned agents, newest first.
func (v View) Spawned() []SpawnedAgent {
	out := []SpawnedAgent{}
	if v.c == nil {
		return out
	}
	for _, a := range v.c.Spawned {
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

// Spawn returns the spawn record of a child DID.
func (v View) Spawn(did string) (SpawnedAgent, bool) {
	if v.c == nil || v.c.Spawned[did] == nil {
		return SpawnedAgent{}, false
	}
	a := *v.c.Spawned[did]
	a.Capabilities = slices.Clone(a.Capabilities)
	return a, true
}

// Capabilities returns a channel's grants that have not expired at unix ms now.
func (v View) Capabilities(channel string, now int64) []CapabilityGrant {
	out := []CapabilityGrant{}
	if v.c == nil {
		return out
	}
	for _, g := range v.c.Capabilities[channel] {
		if g.ExpiresAt == 0 || g.ExpiresAt > now {
			out = append(out, *g)
		}
	}
	return out
}

// Approvals returns a channel's approvals, oldest first.
func (v View) Approvals(channel string) []Approval {
	out := []Approval{}
	if v.c == nil {
		return out
	}
	for _, a := range v.c.Approvals[channel] {
		out = append(out, *a)
	}
	return out
}

// Actor returns the actor record of a DID.
func (v View) Actor(did string) (ActorRecord, bool) {
	if v.c == nil || v.c.Actors[did] == nil {
		return ActorRecord{}, false
	}
	r := *v.c.Actors[did]
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

// Timeline returns a venue's timeline items keep accepts, newest first, at most limit.
func (v View) Timeline(venue string, keep func(*TimelineItem) bool, limit int) []TimelineItem {
	out := []TimelineItem{}
	if v.c == nil {
		return out
	}
	list := v.c.Timeline[venue]
	for i := len(list) - 1; i >= 0 && len(out) < limit; i-- {
		if keep(&list[i]) {
			it := list[i]
			it.Details = maps.Clone(it.Details)
			out = append(out, it)
		}
	}
	return out
}

// JudgeAct answers the result code filing an act event would get now, without filing it: what a
// gateway checks before it relays the event. The log may still refuse it (another event won a
// race).
func (v View) JudgeAct(venue, eventID, from string, fields map[string]string) fsm.Code {
	return judgeAct(v.c, venue, act.Event{ID: eventID, Sender: from, Fields: fields}).Code
}

// Digest is the SHA-256 of the coordination state's encoding: equal on replicas holding the
// same models, and unchanged by a refused command.
func (v View) Digest() [32]byte {
	data, err := json.Marshal(v.c)
	if err != nil { // cannot happen for these types; make it visible rather than silent
		panic(fmt.Sprintf("fsm: coordination digest: %v", err))
	}
	return sha256.Sum256(data)
}
