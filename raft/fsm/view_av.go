package fsm

import (
	"slices"
	"sort"
)

// Read methods over calls for the gateways and the node. They return copies: callers may keep
// them after Machine.Read returns.

func (c *AVCall) clone() AVCall {
	out := *c
	out.Participants = slices.Clone(c.Participants)
	out.Artifacts = slices.Clone(c.Artifacts)
	return out
}

// AVCall returns the call with id, live or recently ended.
func (s *State) AVCall(id string) (AVCall, bool) {
	if s.av == nil || s.av.Calls[id] == nil {
		return AVCall{}, false
	}
	return s.av.Calls[id].clone(), true
}

// AVActive returns the channel's live call.
func (s *State) AVActive(channel string) (AVCall, bool) {
	if s.av == nil {
		return AVCall{}, false
	}
	if id := s.av.Active[channel]; id != "" {
		return s.AVCall(id)
	}
	return AVCall{}, false
}

// AVRecent returns up to limit ended calls of channel ("" = every channel), newest first.
func (s *State) AVRecent(channel string, limit int) []AVCall {
	out := []AVCall{}
	if s.av == nil {
		return out
	}
	for i := len(s.av.Ended) - 1; i >= 0 && len(out) < limit; i-- {
		if c := s.av.Calls[s.av.Ended[i]]; c != nil && (channel == "" || c.Channel == channel) {
			out = append(out, c.clone())
		}
	}
	return out
}

// AVLive returns every live call, by channel name.
func (s *State) AVLive() []AVCall {
	out := []AVCall{}
	if s.av == nil {
		return out
	}
	for _, id := range s.av.Active {
		if c := s.av.Calls[id]; c != nil {
			out = append(out, c.clone())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Channel < out[j].Channel })
	return out
}

// AVEligible answers OK when did may take part in channel's call (it has a session in the
// channel and is not banned), else the refusal: ErrAVNeedsAccount, ErrNoSuchChannel,
// ErrNotOnChannel or ErrBanned.
func (s *State) AVEligible(channel, did string) Code {
	_, code := s.avMember(channel, did)
	return code
}

// AVMayRead reports whether a reader (did "" = anonymous) may see the channel's calls, with the
// rule of channel reads; exists is false when there is no such channel.
func (s *State) AVMayRead(channel, did string) (exists, may bool) {
	c := s.channels[channel]
	if c == nil {
		return false, false
	}
	return true, s.MayRead(c, did)
}

// AVMayEnd reports whether did (or the session, when given) may end channel's call as
// AVOperatorEnd requires: a channel operator of the channel or a server operator. (A node's
// configured operator DIDs are the proposer's to add.)
func (s *State) AVMayEnd(channel, did, session string) bool {
	_, ok := s.avOperator(channel, did, session)
	return ok
}
