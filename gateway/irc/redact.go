package irc

import (
	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node/chat"
)

// IRCv3 draft/message-redaction: REDACT <target> <msgid> [:<reason>] is the standard form of the
// deletes Palaver already has (a TAGMSG with +draft/delete): it is handled as one, with the same
// authorship, signature and moderation rules, and a client with the capability receives every
// delete as REDACT.

const redactionCap = "draft/message-redaction"

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
	c.message("TAGMSG", ircmsg.Message{Command: "TAGMSG", Tags: tags, Params: []string{target}}, rb)
	rb.c.rbMu.Lock()
	defer rb.c.rbMu.Unlock()
	for i := from; i < len(rb.msgs); i++ {
		f := &rb.msgs[i]
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

// redaction renders a delete (a TAGMSG carrying +draft/delete) as REDACT for a client with the
// capability; ok is false for any other message.
func (o *outMsg) redaction(caps capBits) (ircmsg.Message, bool) {
	id := o.clientTags["+draft/delete"]
	if o.msg.Command != "TAGMSG" || id == "" || caps&capRedaction == 0 || len(o.msg.Params) == 0 {
		return ircmsg.Message{}, false
	}
	m := o.forCaps(caps)
	m.Command, m.Params = "REDACT", []string{o.msg.Params[0], id}
	return m, true
}
