// Package ircmsg owns the IRC line format: parsing one received line into a
// Message and serializing a Message back to its wire form, with IRCv3
// message-tags (escaped tag values) and the RFC 1459/2812 parameter rules.
//
// It is hand-written rather than taken from a library because it sits on the
// server's hot path: parsing returns substrings of the input instead of
// copies, tag values are only unescaped (allocated) when they contain an
// escape, and serialization appends straight into a caller-owned buffer so a
// message rendered once can be fanned out to many connections.
//
// The package does not frame lines: enforcing MaxLineBytes on input (417 and
// draining) and on output is the transport's job.
package ircmsg
