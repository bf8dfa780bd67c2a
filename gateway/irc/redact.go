package irc

import (
	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// IRCv3 draft/message-redaction: REDACT <target> <msgid> [:<reason>] is the standard form of the
// deletes Palaver already has (a TAGMSG with +draft/delete): it is handled as one, with the same
// authorship, signature and moderation rules, and a client with the capability receives every
// delete as REDACT, with the reason the REDACT gave (kept with the delete in redactReasonTag).
// A target the sender cannot delete in (no such channel, not a member) is FAIL REDACT
// INVALID_TARGET.

const (
	redactionCap    = "draft/message-redaction"
	redactReasonTag = "redact-reason"
)

// redactFailures maps the delete path's FAIL codes onto the specification's.
var redactFailures = map[string]string{
	"MESSAGE_NOT_FOUND": "UNKNOWN_MSGID",
	"AUTHOR_MISMATCH":   "REDACT_FORBIDDEN",
	"INVALID_REFERENCE": "UNKNOWN_MSGID",
}

func handleREDACT(c *client, m ircmsg.Message, rb *respBuf) {
	target, msgid := m.Param(0), m.Param(1)
	tags := chat.CopyTags(m.Tags)
	tags["+draft/delete"] = msgid
	rb.c.rbMu.Lock()
	from := len(rb.msgs)
	rb.c.rbMu.Unlock()
	reason := m.Param(2)
	if len(reason) > fsm.MaxTopicLen {
		reason = truncate(reason, fsm.MaxTopicLen)
	}
	c.messageWith("TAGMSG", ircmsg.Message{Command: "TAGMSG", Tags: tags, Params: []string{target}}, map[string]string{redactReasonTag: reason}, rb)
	rb.c.rbMu.Lock()
	defer rb.c.rbMu.Unlock()
	for i := from; i < len(rb.msgs); i++ {
		f := &rb.msgs[i]
		if invalidTarget[f.Command] {
			*f = c.failMsg("REDACT", "INVALID_TARGET", "You cannot delete messages from "+target, target)
			continue
		}
		if f.Command != "FAIL" || len(f.Params) < 2 {
			continue
		}
		code := f.Params[1]
		if mapped, ok := redactFailures[code]; ok {
			code = mapped
		}
		f.Params = append([]string{"REDACT", code, target, msgid}, f.Params[len(f.Params)-1])
	}
}

// invalidTarget are the numerics the message path answers a target the sender cannot send to:
// no such nick or channel, cannot send, not on the channel.
var invalidTarget = map[string]bool{"401": true, "403": true, "404": true, "442": true}

// redaction renders a delete (a TAGMSG carrying +draft/delete) as REDACT for a client with the
// capability; ok is false for any other message.
func (o *outMsg) redaction(caps capBits) (ircmsg.Message, bool) {
	id := o.clientTags["+draft/delete"]
	if o.msg.Command != "TAGMSG" || id == "" || caps&capRedaction == 0 || len(o.msg.Params) == 0 {
		return ircmsg.Message{}, false
	}
	m := o.forCaps(caps)
	m.Command, m.Params = "REDACT", []string{o.msg.Params[0], id}
	if reason := o.clientTags[redactReasonTag]; reason != "" {
		m.Params = append(m.Params, reason)
		m.ForceTrailing = true
	}
	return m, true
}
