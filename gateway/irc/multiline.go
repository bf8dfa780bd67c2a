package irc

import (
	"strconv"
	"strings"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node/limits"
)

// IRCv3 draft/multiline: a client sends one message as a batch of lines
//
//	BATCH +<ref> draft/multiline <target>
//	@batch=<ref> PRIVMSG <target> :<line>
//	@batch=<ref>;draft/multiline-concat PRIVMSG <target> :<continued without a newline>
//	BATCH -<ref>
//
// and the server handles it as one message whose text holds real newlines: it is signed, stored,
// replayed and relayed to the other nodes and peer servers as one message. A client with the
// capability receives it as such a batch (msgid and tags on the opening line); any other client
// receives one line per line of text, the first carrying the msgid.
const (
	multilineMaxBytes = limits.MultilineBytes // the text of a multiline message, newlines included
	multilineMaxLines = limits.MultilineLines
	multilineCap      = "draft/multiline"
	multilineConcat   = "draft/multiline-concat"
)

// multilineCapValue is the capability's value in CAP LS 302.
var multilineCapValue = "max-bytes=" + strconv.Itoa(multilineMaxBytes) + ",max-lines=" + strconv.Itoa(multilineMaxLines)

// multilineBatch is a client's open draft/multiline batch. Only the reader goroutine touches it.
type multilineBatch struct {
	ref, target, command string
	tags                 map[string]string // tags of the opening BATCH line (the message's tags)
	label                string
	text                 strings.Builder
	lines                int
}

// handleBATCH opens or closes a client batch; draft/multiline is the only client batch type.
func handleBATCH(c *client, m ircmsg.Message, rb *respBuf) {
	ref := m.Param(0)
	fail := func(code, text string, ctx ...string) { rb.add(c.failMsg("BATCH", code, text, ctx...)) }
	switch {
	case strings.HasPrefix(ref, "+") && len(ref) > 1:
		if c.ml != nil {
			fail("MULTILINE_INVALID", "A batch is already open", c.ml.ref)
			c.ml = nil
			return
		}
		if !strings.EqualFold(m.Param(1), multilineCap) || !c.has(capMultiline) {
			fail("INVALID_PARAMS", "Unsupported batch type", m.Param(1))
			return
		}
		if m.Param(2) == "" || strings.IndexByte(m.Param(2), ',') >= 0 {
			fail("MULTILINE_INVALID_TARGET", "A multiline batch needs one target", ref[1:], m.Param(2))
			return
		}
		// A label on the opening line labels the message's response, sent when the batch closes.
		c.ml = &multilineBatch{ref: ref[1:], target: m.Param(2), tags: m.Tags, label: rb.label}
		rb.label = ""
	case strings.HasPrefix(ref, "-") && len(ref) > 1:
		b := c.ml
		c.ml = nil
		if b == nil || b.ref != ref[1:] {
			fail("MULTILINE_INVALID", "No such batch is open", ref[1:])
			return
		}
		if b.lines == 0 || strings.TrimSpace(b.text.String()) == "" {
			fail("MULTILINE_INVALID", "A multiline message needs text", b.ref)
			return
		}
		if rb.label == "" {
			rb.label = b.label
		}
		c.message(b.command, ircmsg.Message{Command: b.command, Tags: b.tags, Params: []string{b.target, b.text.String()}}, rb)
	default:
		fail("INVALID_PARAMS", "A batch reference starts with + or -", ref)
	}
}

// collectMultiline takes a line that belongs to the client's open multiline batch and reports
// whether it did. A line that breaks the batch's rules ends the batch with a FAIL.
func (c *client) collectMultiline(m ircmsg.Message) bool {
	if c.mlRefused != "" { // the rest of a refused batch is dropped, its end included
		if m.Tags["batch"] == c.mlRefused {
			return true
		}
		if m.Command == "BATCH" && m.Param(0) == "-"+c.mlRefused {
			c.mlRefused = ""
			return true
		}
	}
	b := c.ml
	if b == nil || m.Tags["batch"] != b.ref || m.Command == "BATCH" {
		return false
	}
	refuse := func(code, text string, ctx ...string) bool {
		c.ml, c.mlRefused = nil, b.ref
		c.pipe.wait()
		c.sendNow(c.failMsg("BATCH", code, text, ctx...))
		return true
	}
	if (m.Command != "PRIVMSG" && m.Command != "NOTICE") || (b.command != "" && m.Command != b.command) {
		return refuse("MULTILINE_INVALID", "A multiline batch holds PRIVMSG or NOTICE lines of one kind", b.ref)
	}
	if m.Param(0) != b.target {
		return refuse("MULTILINE_INVALID_TARGET", "Every line must go to the batch's target", b.ref, m.Param(0))
	}
	b.command = m.Command
	_, concat := m.Tags[multilineConcat]
	if concat && m.Param(1) == "" {
		return refuse("MULTILINE_INVALID", "A concatenated line must not be empty", b.ref)
	}
	if b.lines > 0 && !concat {
		b.text.WriteByte('\n')
	}
	b.text.WriteString(m.Param(1))
	b.lines++
	if b.lines > multilineMaxLines {
		return refuse("MULTILINE_MAX_LINES", "Too many lines", strconv.Itoa(multilineMaxLines), b.ref)
	}
	if b.text.Len() > multilineMaxBytes {
		return refuse("MULTILINE_MAX_BYTES", "Too many bytes", strconv.Itoa(multilineMaxBytes), b.ref)
	}
	return true
}

// expand renders a message for a client with caps: one line, or, for a PRIVMSG or NOTICE whose
// text holds newlines, a draft/multiline batch (clients with the capability and batch) or one
// line per line of text with the msgid on the first.
func (o *outMsg) expand(caps capBits) []ircmsg.Message {
	if r, ok := o.redaction(caps); ok {
		return []ircmsg.Message{r}
	}
	m := o.forCaps(caps)
	n := len(m.Params)
	if (m.Command != "PRIVMSG" && m.Command != "NOTICE") || n < 2 || strings.IndexByte(m.Params[n-1], '\n') < 0 {
		return []ircmsg.Message{m}
	}
	parts := strings.Split(m.Params[n-1], "\n")
	line := func(text string, tags map[string]string) ircmsg.Message {
		l := ircmsg.Message{Source: m.Source, Command: m.Command, Params: append(append([]string(nil), m.Params[:n-1]...), text), ForceTrailing: true}
		l.Tags = tags
		return l
	}
	out := make([]ircmsg.Message, 0, len(parts)+2)
	if caps&capMultiline != 0 && caps&capBatch != 0 {
		ref := "ml" + o.msgid
		start := ircmsg.Message{Source: m.Source, Command: "BATCH", Params: []string{"+" + ref, multilineCap, m.Params[0]}, Tags: m.Tags}
		out = append(out, start)
		for _, p := range parts {
			out = append(out, line(p, map[string]string{"batch": ref}))
		}
		end := ircmsg.Message{Source: m.Source, Command: "BATCH", Params: []string{"-" + ref}}
		if outer, ok := m.Tags["batch"]; ok {
			end.Tags = map[string]string{"batch": outer}
		}
		return append(out, end)
	}
	for i, p := range parts {
		tags := m.Tags
		if i > 0 {
			tags = cloneTags(m.Tags)
			delete(tags, "msgid")
		}
		out = append(out, line(p, tags))
	}
	return out
}
