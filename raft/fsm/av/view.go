package av

import (
	"slices"
	"sort"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// View reads the calls of a state for the gateways and the node. Get it with Of inside
// Machine.Read; it is valid during that callback only, but what its methods return are copies
// that callers may keep.
type View struct {
	st *fsm.State
	m  *AVState
}

// Of is the calls' view of st.
func Of(st *fsm.State) View { return View{st, section.Of(st)} }

func (c *AVCall) clone() AVCall {
	out := *c
	out.Participants = slices.Clone(c.Participants)
	out.Artifacts = slices.Clone(c.Artifacts)
	return out
}

// Call returns the call with id, live or recently ended.
func (v View) Call(id string) (AVCall, bool) {
	if v.m == nil || v.m.Calls[id] == nil {
		return AVCall{}, false
	}
	return v.m.Calls[id].clone(), true
}

// Active returns the channel's live call.
func (v View) Active(channel string) (AVCall, bool) {
	if v.m == nil {
		return AVCall{}, false
	}
	if id := v.m.Active[channel]; id != "" {
		return v.Call(id)
	}
	return AVCall{}, false
}

// Recent returns up to limit ended calls of channel ("" = every channel), newest first.
func (v View) Recent(channel string, limit int) []AVCall {
	out := []AVCall{}
	if v.m == nil {
		return out
	}
	for i := len(v.m.Ended) - 1; i >= 0 && len(out) < limit; i-- {
		if c := v.m.Calls[v.m.Ended[i]]; c != nil && (channel == "" || c.Channel == channel) {
			out = append(out, c.clone())
		}
	}
	return out
}

// Live returns every live call, by channel name.
func (v View) Live() []AVCall {
	out := []AVCall{}
	if v.m == nil {
		return out
	}
	for _, id := range v.m.Active {
		if c := v.m.Calls[id]; c != nil {
			out = append(out, c.clone())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Channel < out[j].Channel })
	return out
}

// Eligible answers OK when did may take part in channel's call (it has a session in the
// channel and is not banned), else the refusal: ErrAVNeedsAccount, ErrNoSuchChannel,
// ErrNotOnChannel or ErrBanned.
func (v View) Eligible(channel, did string) fsm.Code {
	_, code := avMember(v.st, channel, did)
	return code
}

// MayRead reports whether a reader (did "" = anonymous) may see the channel's calls, with the
// rule of channel reads; exists is false when there is no such channel.
func (v View) MayRead(channel, did string) (exists, may bool) {
	c, ok := v.st.Channel(channel)
	if !ok {
		return false, false
	}
	return true, v.st.MayRead(c, did)
}

// MayEnd reports whether did (or the session, when given) may end channel's call as
// AVOperatorEnd requires: a channel operator of the channel or a server operator. (A node's
// configured operator DIDs are the proposer's to add.)
func (v View) MayEnd(channel, did, session string) bool {
	_, ok := avOperator(v.st, channel, did, session)
	return ok
}
