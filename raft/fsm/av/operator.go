package av

import "github.com/palaver-chat/palaver/raft/fsm"

// An operator ending a channel's call: a channel operator of the call's channel or a server
// operator ends it for everyone. The authority is checked here, against the replicated state, so
// a node that proposes the end on a stale view cannot end a call its sender may not end.

// TypeAVOperatorEnd ends a call on an operator's word.
const TypeAVOperatorEnd fsm.CommandType = 56

// ErrAVNotOperator refuses AVOperatorEnd from someone who is neither a channel operator of the
// call's channel nor a server operator.
const ErrAVNotOperator fsm.Code = 45

// avOperatorReason is the end reason when the operator gives none.
const avOperatorReason = "ended by an operator"

// AVOperatorEnd ends a live call. Whoever ends it is a channel operator of the call's channel
// (an op session of DID or of Session there, the channel's founder or one of its DID operators) or a server
// operator (a session of DID, or Session, that is an operator; or ServerOper: the proposing node
// counts DID among its configured operator DIDs).
type AVOperatorEnd struct {
	CallID     string `json:"call_id"`
	DID        string `json:"did,omitempty"`     // who ends it; "" for a guest session
	Session    string `json:"session,omitempty"` // the IRC session it came from; "" over REST
	ServerOper bool   `json:"server_oper,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

func (AVOperatorEnd) CommandType() fsm.CommandType { return TypeAVOperatorEnd }

// avOperator finds who may end channel's call among did's sessions and session: its reference
// and true when one is a channel operator there or a server operator. A session that belongs to
// another account than did (when did is set) does not count.
func avOperator(s *fsm.State, channel, did, session string) (fsm.SessionRef, bool) {
	ch, ok := s.Channel(channel)
	var cands []fsm.Session
	if se, ok := s.Session(session); ok && (did == "" || se.DID == did) {
		cands = append(cands, se)
	}
	if did != "" {
		cands = append(cands, s.SessionsByDID(did)...)
	}
	for _, se := range cands {
		if se.Oper || ok && s.IsChannelOp(ch, &se) {
			return se.Ref(), true
		}
	}
	ref := fsm.SessionRef{DID: did}
	if len(cands) > 0 {
		ref = cands[0].Ref()
	} else if did != "" {
		ref.Nick = s.OwnedNick(did)
	}
	return ref, s.ChannelExists(channel) && s.IsChannelOpDID(channel, did) // the founder or a DID operator
}

func (a *tx) avOperatorEnd(c AVOperatorEnd) fsm.Result {
	if c.CallID == "" || c.DID == "" && c.Session == "" {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	call := a.activeCall(c.CallID)
	if call == nil {
		return fsm.Result{Code: ErrAVNoCall}
	}
	actor, ok := avOperator(a.State(), call.Channel, c.DID, c.Session)
	if !ok && !(c.ServerOper && c.DID != "") {
		return fsm.Result{Code: ErrAVNotOperator}
	}
	reason := clip(c.Reason, MaxAVReason)
	if reason == "" {
		reason = avOperatorReason
	}
	a.endCall(call, actor, reason)
	return fsm.Result{Code: fsm.OK}
}
