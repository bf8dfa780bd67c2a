package chat

import (
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// State is the read side of the local replica.
type State interface {
	Read(func(*fsm.State))
}

// Request is a message a session wants to send to a channel, as the send rules see it.
type Request struct {
	Session string // the sender's session id
	DID     string // the sender's DID, "" for a guest
	Oper    bool   // the sender is a server operator on its connection
	Channel string // folded
	Command string // PRIVMSG, NOTICE or TAGMSG
	Text    string
	Tags    map[string]string // the client-only tags it carries
	// OwnSignature says the message carries a signature by the sender's own key that verifies.
	OwnSignature bool
	// RateLimited says the sender's message budget is spent (the IRC edge's flood state for its
	// connection); surfaces without one leave it false.
	RateLimited bool
}

// Verdict is what the rules say of a Request.
type Verdict struct {
	fsm.ChannelSend
	// Numeric is the IRC numeric of a refusal by the channel (403 no such channel, 404 the modes
	// refuse, 442 a reaction from a non-member), or "".
	Numeric string
	// Code is the FAIL code of any other refusal (RATE_LIMITED, SIGNATURE_REQUIRED), or "".
	Code string
	// Text explains the refusal.
	Text string
}

// Allowed reports whether the message would be accepted.
func (v Verdict) Allowed() bool { return v.Numeric == "" && v.Code == "" }

// Check applies the send rules, in the order a sender meets them: the flood budget, the channel's
// existence, its modes (+n, +m, bans and the mute extban, +E, +C; see fsm.CheckChannelSend), a
// reaction's membership, and the signature an authenticated sender's edit, delete or reaction
// needs. It changes nothing, so a tool may call it to predict an answer.
func Check(st State, r Request) Verdict {
	var v Verdict
	if r.RateLimited {
		v.Code, v.Text = "RATE_LIMITED", "You are sending too fast"
		return v
	}
	st.Read(func(s *fsm.State) {
		v.ChannelSend = s.CheckChannelSend(r.Channel, r.Session, r.Oper, r.Command, r.Text)
	})
	switch {
	case !v.Exists:
		v.Numeric, v.Text = "403", "No such channel"
	case v.Refusal != "":
		v.Numeric, v.Text = "404", v.Refusal
	case IsReaction(r.Command, r.Tags) && !v.Member:
		v.Numeric, v.Text = "442", "You're not on that channel"
	case SignatureRequired(r.DID, r.Command, r.Tags) && !r.OwnSignature:
		v.Code, v.Text = "SIGNATURE_REQUIRED", "A signed request is required to modify messages on this server"
	}
	return v
}

// SignatureRequired reports whether a message needs its sender's own valid signature: an edit,
// delete or reaction by an authenticated user (guests are matched by nick instead).
func SignatureRequired(did, command string, tags map[string]string) bool {
	return did != "" && IsMutation(command, tags)
}

// IsMutation reports whether a message edits, deletes or reacts to another.
func IsMutation(command string, tags map[string]string) bool {
	if _, ok := tags["+draft/edit"]; ok && command != "TAGMSG" {
		return true
	}
	return command == "TAGMSG" && (IsDeletion(tags) || IsReaction(command, tags))
}

// IsDeletion reports whether a TAGMSG's tags delete a message.
func IsDeletion(tags map[string]string) bool {
	_, draft := tags["+draft/delete"]
	_, plain := tags["+delete"]
	return draft || plain
}

// IsReaction reports whether a message reacts to another (or takes a reaction back): a TAGMSG
// with a react tag and the +reply naming that message. A react tag without +reply reacts to
// nothing (the react client tag is to be used with +reply); such a TAGMSG is an ordinary one,
// relayed with its client-only tags.
func IsReaction(command string, tags map[string]string) bool {
	if command != "TAGMSG" || signing.ReplyFromTags(tags) == "" {
		return false
	}
	for _, k := range []string{"+react", "+draft/react", "+freeq.at/unreact"} {
		if _, ok := tags[k]; ok {
			return true
		}
	}
	return false
}
