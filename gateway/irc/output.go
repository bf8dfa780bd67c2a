package irc

import (
	"strings"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// outMsg is one message fanned out to many recipients: it is serialized at most once per tag
// variant (message-tags × server-time × account-tag), and the same bytes are queued to everyone
// who negotiated that variant.
type outMsg struct {
	msg        ircmsg.Message    // source, command, params; no tags
	clientTags map[string]string // +tags relayed to message-tags clients
	time       string            // server-time value, "" for none
	msgid      string
	account    string
	batch      string // batch reference, sent to batch clients
	bot        bool   // the sender is in bot mode: the bot tag, to message-tags clients
	// rendered holds the wire form of each variant rendered so far (bytesFor). A message goes out
	// in one to three variants as a rule, so the first two are kept inline and a message costs no
	// table of every possible variant (64 slices, 1.5 KB, zeroed per message).
	rendered     [2]variantLine
	moreRendered []variantLine
}

// variantLine is a message's wire form for one variant (variantOf); line is nil until rendered.
type variantLine struct {
	variant int
	line    []byte
}

// renderedFor returns the wire form of variant v rendered so far, or nil.
func (o *outMsg) renderedFor(v int) []byte {
	for i := range o.rendered {
		if o.rendered[i].line != nil && o.rendered[i].variant == v {
			return o.rendered[i].line
		}
	}
	for _, r := range o.moreRendered {
		if r.variant == v {
			return r.line
		}
	}
	return nil
}

// keepRendered records the wire form of variant v.
func (o *outMsg) keepRendered(v int, line []byte) {
	for i := range o.rendered {
		if o.rendered[i].line == nil {
			o.rendered[i] = variantLine{variant: v, line: line}
			return
		}
	}
	o.moreRendered = append(o.moreRendered, variantLine{variant: v, line: line})
}

func variantOf(caps capBits) int {
	v := 0
	if caps&capMessageTags != 0 {
		v |= 1
	}
	if caps&capServerTime != 0 {
		v |= 2
	}
	if caps&capAccountTag != 0 {
		v |= 4
	}
	if caps&capBatch != 0 {
		v |= 8
	}
	if caps&capMultiline != 0 {
		v |= 16
	}
	if caps&capRedaction != 0 {
		v |= 32
	}
	return v
}

// forCaps returns the message with the tags a client with caps may see.
func (o *outMsg) forCaps(caps capBits) ircmsg.Message {
	m := o.msg
	m.Tags = nil
	if caps&capMessageTags != 0 {
		for k, v := range o.clientTags {
			if !serverOnlyTags[k] {
				m.SetTag(k, v)
			}
		}
		if o.msgid != "" {
			m.SetTag("msgid", o.msgid)
		}
		if o.bot {
			m.SetTag("bot", "")
		}
	}
	if o.time != "" && caps&capServerTime != 0 {
		m.SetTag("time", o.time)
	}
	if o.account != "" && caps&capAccountTag != 0 {
		m.SetTag("account", o.account)
	}
	if o.batch != "" && caps&capBatch != 0 {
		m.SetTag("batch", o.batch)
	}
	return m
}

// bytesFor returns the wire form for a client with caps, rendering it on first use.
func (o *outMsg) bytesFor(caps capBits) []byte {
	v := variantOf(caps)
	if b := o.renderedFor(v); b != nil {
		return b
	}
	var b []byte
	for _, m := range o.expand(caps) { // one line, or the lines of a multiline message
		b = m.AppendTo(b)
	}
	o.keepRendered(v, b)
	return b
}

// addOut appends a message as a client with caps receives it (see outMsg.expand).
func (rb *respBuf) addOut(o *outMsg, caps capBits) {
	for _, m := range o.expand(caps) {
		rb.add(m)
	}
}

// respBuf collects a command's replies to the client that sent it, so that labeled-response can
// label them or wrap them in a batch. Events caused by the client's own command are redirected
// here while the command runs.
type respBuf struct {
	c     *client
	label string
	msgs  []ircmsg.Message
	// pipelined is set for a command that may leave its store and delivery to the connection's
	// pipeline; after is what it left (see pipeline.go). Both belong to the reader goroutine.
	pipelined bool
	after     *sendStep
}

// add appends a reply. The client's rbMu guards msgs: an event caused by the command may be added
// from the state machine's goroutine while the handler still writes (after a failed proposal whose
// entry was applied anyway).
func (rb *respBuf) add(m ircmsg.Message) {
	rb.c.rbMu.Lock()
	rb.msgs = append(rb.msgs, m)
	rb.c.rbMu.Unlock()
}

// flush renders and queues the collected replies.
func (rb *respBuf) flush() {
	c := rb.c
	if rb.label == "" {
		if len(rb.msgs) == 0 {
			return
		}
		lines := make([][]byte, 0, len(rb.msgs))
		for i := range rb.msgs {
			lines = append(lines, rb.msgs[i].AppendTo(nil))
		}
		c.q.reply(lines...)
		return
	}
	switch len(rb.msgs) {
	case 0:
		ack := ircmsg.Message{Source: c.s.cfg.ServerName, Command: "ACK"}
		ack.SetTag("label", rb.label)
		c.q.reply(ack.AppendTo(nil))
	case 1:
		m := rb.msgs[0]
		m.Tags = cloneTags(m.Tags)
		m.SetTag("label", rb.label)
		c.q.reply(m.AppendTo(nil))
	default:
		if oneBatch(rb.msgs) { // a batch of a type for the whole response: the label goes on it
			lines := make([][]byte, 0, len(rb.msgs))
			for i := range rb.msgs {
				m := rb.msgs[i]
				if i == 0 {
					m.Tags = cloneTags(m.Tags)
					m.SetTag("label", rb.label)
				}
				lines = append(lines, m.AppendTo(nil))
			}
			c.q.reply(lines...)
			break
		}
		id := c.s.nextBatchID()
		start := ircmsg.Message{Source: c.s.cfg.ServerName, Command: "BATCH", Params: []string{"+" + id, "labeled-response"}}
		start.SetTag("label", rb.label)
		lines := make([][]byte, 0, len(rb.msgs)+2)
		lines = append(lines, start.AppendTo(nil))
		for i := range rb.msgs {
			m := rb.msgs[i]
			if _, nested := m.Tags["batch"]; !nested {
				m.Tags = cloneTags(m.Tags)
				m.SetTag("batch", id)
			}
			lines = append(lines, m.AppendTo(nil))
		}
		end := ircmsg.Message{Source: c.s.cfg.ServerName, Command: "BATCH", Params: []string{"-" + id}}
		lines = append(lines, end.AppendTo(nil))
		c.q.reply(lines...)
	}
	rb.msgs = nil
}

// oneBatch reports whether msgs are one batch: its opening line, lines inside it (or inside
// batches opened within it) and its closing line. IRCv3 labeled-response labels such a response
// on its opening line ("an existing type applicable to the entire response"); draft/multiline
// requires it for the echo of a multiline message.
func oneBatch(msgs []ircmsg.Message) bool {
	first, last := msgs[0], msgs[len(msgs)-1]
	if first.Command != "BATCH" || len(first.Params) < 2 || !strings.HasPrefix(first.Param(0), "+") ||
		last.Command != "BATCH" || last.Param(0) != "-"+first.Param(0)[1:] || first.Tags["batch"] != "" {
		return false
	}
	open := map[string]bool{first.Param(0)[1:]: true}
	for _, m := range msgs[1 : len(msgs)-1] {
		if !open[m.Tags["batch"]] {
			return false
		}
		if m.Command == "BATCH" && strings.HasPrefix(m.Param(0), "+") {
			open[m.Param(0)[1:]] = true
		}
	}
	return true
}

func cloneTags(t map[string]string) map[string]string {
	out := make(map[string]string, len(t)+1)
	for k, v := range t {
		out[k] = v
	}
	return out
}
