package fsm

import "strings"

// ChannelSend is what a channel's send rules say of a message a session wants to send to it.
type ChannelSend struct {
	Exists    bool   // the channel exists
	Member    bool   // the session is a member of it
	Moderator bool   // the session is an operator or half-operator (may edit or delete others' messages)
	Refusal   string // "" when the modes allow the message; otherwise why not (the text of 404)
}

// CheckChannelSend applies a channel's send rules to a message from session: +n (members only,
// unless oper, a server operator on this connection), +m (voiced and up), bans and the mute
// extban (voiced and up are exempt), +E (text must be encrypted, "ENC" prefix; TAGMSGs pass) and
// +C (no CTCP but ACTION). channel is folded. It reads the state only.
func (s *State) CheckChannelSend(channel, session string, oper bool, command, text string) ChannelSend {
	ch := s.channels[channel]
	if ch == nil {
		return ChannelSend{}
	}
	se := s.sessions[session]
	mem, member := ch.Member(session)
	op := s.isChannelOp(ch, se)
	out := ChannelSend{Exists: true, Member: member, Moderator: op || mem.HalfOp}
	privileged := op || mem.HalfOp || mem.Voice
	switch {
	case !member && ch.NoExternal && !oper:
		out.Refusal = "Cannot send to channel (+n)"
	case ch.Moderated && !privileged:
		out.Refusal = "Cannot send to channel (+m)"
	case !privileged && se != nil && ch.IsBanned(se.Hostmask(), se.DID):
		out.Refusal = "Cannot send to channel (+b)"
	case !privileged && se != nil && ch.IsMuted(se.Hostmask(), se.DID):
		out.Refusal = "Cannot send to channel (muted)"
	case ch.Encrypted && command != "TAGMSG" && !strings.HasPrefix(text, "ENC"):
		out.Refusal = "Cannot send to channel (+E: encrypted messages only)"
	case ch.NoCTCP && IsCTCP(text):
		out.Refusal = "Cannot send to channel (+C: no CTCP)"
	}
	return out
}

// IsCTCP reports whether a message is a CTCP request or reply other than ACTION (which +C allows).
func IsCTCP(text string) bool {
	return strings.HasPrefix(text, "\x01") && !strings.HasPrefix(text, "\x01ACTION")
}
