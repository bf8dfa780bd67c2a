package ircmsg

import "errors"

// MaxLineBytes is the largest IRC line accepted or sent, counting the tags
// and the terminating CRLF. Longer input lines are answered with 417.
const MaxLineBytes = 8192

// maxParams is the RFC 1459 parameter limit; the 15th parameter takes the
// rest of the line.
const maxParams = 15

var (
	// ErrEmpty reports a line with no content (only spaces or line endings).
	ErrEmpty = errors.New("ircmsg: empty line")
	// ErrMalformed reports a line that is not a valid IRC message.
	ErrMalformed = errors.New("ircmsg: malformed line")
)

// Message is one IRC line.
type Message struct {
	// Tags holds the IRCv3 message tags with their values unescaped. A tag
	// sent without a value maps to "". Tags is nil when the line has none.
	Tags map[string]string
	// Source is the prefix without its leading ':' ("" if none).
	Source string
	// Command is the verb, upper-cased for letters; numerics as sent ("001").
	Command string
	// Params are the parameters; the trailing parameter is the last element,
	// without its ':'.
	Params []string
	// ForceTrailing makes serialization write the last parameter with a ':'
	// even when it does not need one (some clients expect it on PRIVMSG text).
	// Parse never sets it.
	ForceTrailing bool
}

// Param returns the i-th parameter, or "" when there are not that many.
func (m Message) Param(i int) string {
	if i < 0 || i >= len(m.Params) {
		return ""
	}
	return m.Params[i]
}

// SetTag sets tag k to the unescaped value v, allocating Tags if needed.
func (m *Message) SetTag(k, v string) {
	if m.Tags == nil {
		m.Tags = make(map[string]string, 4)
	}
	m.Tags[k] = v
}
