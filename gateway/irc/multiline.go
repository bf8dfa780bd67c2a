package irc

import (
	"strconv"
	"strings"
	"unicode/utf8"

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
// replayed and relayed to the other nodes and peer servers as one message. The sender's line
// composition is kept with it (the specification asks servers to keep it rather than re-split a
// normalised form): the offsets in the text where a draft/multiline-concat line joined the one
// before are stored in the message's tag composedTag, which no client sees. A client with the
// capability receives the message as such a batch (msgid and tags on the opening line, the concat
// tag where the sender had it); any other client receives one line per line of the composition,
// blank lines left out and the msgid on the first. Either way a line that would pass the 512-byte
// line limit (tags aside) is cut in two, as a concat line for the first, as a separate line for
// the others.
const (
	multilineMaxBytes = limits.MultilineBytes // the text of a multiline message, newlines included
	multilineMaxLines = limits.MultilineLines
	multilineCap      = "draft/multiline"
	multilineConcat   = "draft/multiline-concat"
	// composedTag is the stored tag holding the text offsets of a multiline message's concat
	// lines (comma-separated, increasing), one of serverOnlyTags.
	composedTag = "palaver/multiline-concat"
	// lineLimit is the length of an IRC line without its tags, CRLF included (RFC 1459).
	lineLimit = 512
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
	concatAt             []int // offsets in text where a concat line joined the previous one
}

// handleBATCH opens or closes a client batch; draft/multiline is the only client batch type.
func handleBATCH(c *client, m ircmsg.Message, rb *respBuf) {
	ref := m.Param(0)
	fail := func(code, text string, ctx ...string) { rb.add(c.failMsg("BATCH", code, text, ctx...)) }
	switch {
	case strings.HasPrefix(ref, "+") && len(ref) > 1:
		if c.ml != nil {
			fail("MULTILINE_INVALID", "A batch is already open")
			c.ml = nil
			return
		}
		if !strings.EqualFold(m.Param(1), multilineCap) || !c.has(capMultiline) {
			fail("INVALID_PARAMS", "Unsupported batch type", m.Param(1))
			return
		}
		if m.Param(2) == "" || strings.IndexByte(m.Param(2), ',') >= 0 {
			fail("MULTILINE_INVALID", "A multiline batch needs one target")
			return
		}
		// A label on the opening line labels the message's response, sent when the batch closes.
		c.ml = &multilineBatch{ref: ref[1:], target: m.Param(2), tags: m.Tags, label: rb.label}
		rb.label = ""
	case strings.HasPrefix(ref, "-") && len(ref) > 1:
		b := c.ml
		c.ml = nil
		if b == nil || b.ref != ref[1:] {
			fail("MULTILINE_INVALID", "No such batch is open")
			return
		}
		if b.lines == 0 || strings.TrimSpace(b.text.String()) == "" {
			fail("MULTILINE_INVALID", "A multiline message needs text")
			return
		}
		if rb.label == "" {
			rb.label = b.label
		}
		msg := ircmsg.Message{Command: b.command, Tags: b.tags, Params: []string{b.target, b.text.String()}}
		c.messageWith(b.command, msg, map[string]string{composedTag: formatOffsets(b.concatAt)}, rb)
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
		return refuse("MULTILINE_INVALID", "A multiline batch holds PRIVMSG or NOTICE lines of one kind")
	}
	if m.Param(0) != b.target {
		return refuse("MULTILINE_INVALID_TARGET", "Every line must go to the batch's target", b.target, m.Param(0))
	}
	b.command = m.Command
	_, concat := m.Tags[multilineConcat]
	if concat && m.Param(1) == "" {
		return refuse("MULTILINE_INVALID", "A concatenated line must not be blank")
	}
	switch {
	case b.lines == 0: // the first line: nothing to join, with the tag or without it
	case concat:
		b.concatAt = append(b.concatAt, b.text.Len())
	default:
		b.text.WriteByte('\n')
	}
	b.text.WriteString(m.Param(1))
	b.lines++
	if b.lines > multilineMaxLines {
		return refuse("MULTILINE_MAX_LINES", "Too many lines", strconv.Itoa(multilineMaxLines))
	}
	if b.text.Len() > multilineMaxBytes {
		return refuse("MULTILINE_MAX_BYTES", "Too many bytes", strconv.Itoa(multilineMaxBytes))
	}
	return true
}

// formatOffsets and parseOffsets write and read composedTag's value.
func formatOffsets(at []int) string {
	parts := make([]string, len(at))
	for i, n := range at {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

// parseOffsets reads the concat offsets of text from composedTag's value; nil when the value is
// absent or does not describe text (offsets not increasing, out of range, beside a newline or
// inside a UTF-8 sequence: a peer's tag, or a text that changed), so that the text's newlines
// alone make the lines.
func parseOffsets(v, text string) []int {
	if v == "" {
		return nil
	}
	var out []int
	prev := 0
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n <= prev || n >= len(text) || text[n-1] == '\n' || text[n] == '\n' || !utf8.RuneStart(text[n]) {
			return nil
		}
		out = append(out, n)
		prev = n
	}
	return out
}

// composedLine is one line of a multiline message as its sender composed it: its text, and
// whether it joins the line before without a newline (draft/multiline-concat).
type composedLine struct {
	text   string
	concat bool
}

// composition splits a multiline message's text into its sender's lines (at the newlines and at
// the concat offsets), then cuts every line longer than budget bytes into concat lines.
func composition(text string, concatAt []int, budget int) []composedLine {
	var out []composedLine
	add := func(line string, concat bool) {
		for len(line) > budget {
			cut := cutAt(line, budget)
			out = append(out, composedLine{line[:cut], concat})
			line, concat = line[cut:], true
		}
		out = append(out, composedLine{line, concat})
	}
	start, concat := 0, false
	for i := 0; i <= len(text); i++ {
		switch {
		case i == len(text) || text[i] == '\n':
			add(text[start:i], concat)
			start, concat = i+1, false
		case len(concatAt) > 0 && i == concatAt[0]:
			add(text[start:i], concat)
			start, concat = i, true
			concatAt = concatAt[1:]
		}
	}
	return out
}

// cutAt is where a line longer than budget bytes is cut: after the last space of its second
// half within budget (the space stays at the end of the first part, as the specification
// advises clients), else at the last UTF-8 boundary within budget.
func cutAt(line string, budget int) int {
	if i := strings.LastIndexByte(line[:budget], ' '); i >= budget/2 {
		return i + 1
	}
	cut := budget
	for cut > 1 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return cut
}

// expand renders a message for a client with caps: one line, or, for a PRIVMSG or NOTICE whose
// text holds newlines or concat offsets (composedTag), a draft/multiline batch (clients with the
// capability and batch) or one line per non-blank line with the msgid on the first.
func (o *outMsg) expand(caps capBits) []ircmsg.Message {
	if r, ok := o.redaction(caps); ok {
		return []ircmsg.Message{r}
	}
	m := o.forCaps(caps)
	n := len(m.Params)
	if (m.Command != "PRIVMSG" && m.Command != "NOTICE") || n < 2 {
		return []ircmsg.Message{m}
	}
	text := m.Params[n-1]
	concatAt := parseOffsets(o.clientTags[composedTag], text)
	if strings.IndexByte(text, '\n') < 0 && concatAt == nil {
		return []ircmsg.Message{m}
	}
	// What a line takes besides its text: ":" source " " command (" " param)* " :" text CRLF.
	overhead := len(m.Source) + len(m.Command) + 6
	for _, p := range m.Params[:n-1] {
		overhead += len(p) + 1
	}
	parts := composition(text, concatAt, max(lineLimit-overhead, 64))
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
			tags := map[string]string{"batch": ref}
			if p.concat {
				tags[multilineConcat] = ""
			}
			out = append(out, line(p.text, tags))
		}
		end := ircmsg.Message{Source: m.Source, Command: "BATCH", Params: []string{"-" + ref}}
		if outer, ok := m.Tags["batch"]; ok {
			end.Tags = map[string]string{"batch": outer}
		}
		return append(out, end)
	}
	for _, p := range parts {
		if p.text == "" { // servers must not send blank lines to clients without the capability
			continue
		}
		tags := m.Tags
		if len(out) > 0 {
			tags = cloneTags(m.Tags)
			delete(tags, "msgid")
		}
		out = append(out, line(p.text, tags))
	}
	return out
}
