package ircmsg

import (
	"slices"
	"strings"
)

// AppendTo appends the wire form of m, with its "\r\n", to dst. Tags are
// written in sorted key order so the output is deterministic; tag keys are
// written as given and must be valid IRCv3 keys. The last parameter gets a
// ':' when it is empty, contains a space or starts with ':' (or always, with
// ForceTrailing); only the last parameter may be like that. Any NUL, CR or LF
// in the source, command or parameters is written as a space so a message
// can never smuggle a second line. Line length is not limited here.
func (m Message) AppendTo(dst []byte) []byte {
	if len(m.Tags) > 0 {
		dst = append(dst, '@')
		dst = m.appendTags(dst)
		dst = append(dst, ' ')
	}
	if m.Source != "" {
		dst = append(dst, ':')
		dst = appendSafe(dst, m.Source)
		dst = append(dst, ' ')
	}
	dst = appendSafe(dst, m.Command)
	for i, p := range m.Params {
		dst = append(dst, ' ')
		if i == len(m.Params)-1 && (m.ForceTrailing || needsTrailingColon(p)) {
			dst = append(dst, ':')
		}
		dst = appendSafe(dst, p)
	}
	return append(dst, '\r', '\n')
}

// String returns the wire form of m without the CRLF.
func (m Message) String() string {
	buf := m.AppendTo(make([]byte, 0, m.sizeHint()))
	return string(buf[:len(buf)-2])
}

func (m Message) appendTags(dst []byte) []byte {
	var stack [16]string
	keys := stack[:0]
	for k := range m.Tags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ';')
		}
		dst = append(dst, k...)
		if v := m.Tags[k]; v != "" {
			dst = append(dst, '=')
			dst = appendEscapedTagValue(dst, v)
		}
	}
	return dst
}

func needsTrailingColon(p string) bool {
	return p == "" || p[0] == ':' || strings.ContainsAny(p, " \x00\r\n")
}

// appendSafe appends s with NUL, CR and LF replaced by spaces.
func appendSafe(dst []byte, s string) []byte {
	if !strings.ContainsAny(s, "\x00\r\n") {
		return append(dst, s...)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == 0 || c == '\r' || c == '\n' {
			c = ' '
		}
		dst = append(dst, c)
	}
	return dst
}

func (m Message) sizeHint() int {
	n := len(m.Source) + len(m.Command) + 4
	for k, v := range m.Tags {
		n += len(k) + len(v) + 2
	}
	for _, p := range m.Params {
		n += len(p) + 2
	}
	return n
}
