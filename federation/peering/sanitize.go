package peering

import (
	"strings"
	"unicode/utf8"

	"github.com/palaver-chat/palaver/node/limits"
)

// Caps on strings that come from peers.
const (
	maxTextBytes  = limits.TextBytes
	maxNameBytes  = 256
	maxOrigin     = 64
	maxTags       = 32
	maxTagKey     = 64
	maxTagValue   = 4 << 10
	maxTopicBytes = 1 << 10
)

// sanitize removes \r, \n and NUL, makes the string valid UTF-8 and caps it at max bytes (never
// cutting a rune).
func sanitize(s string, max int) string {
	if strings.ContainsAny(s, "\r\n\x00") {
		s = strings.NewReplacer("\r", "", "\n", "", "\x00", "").Replace(s)
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// sanitizeName also removes characters that would break an IRC prefix or parameter.
func sanitizeName(s string) string {
	s = sanitize(s, maxNameBytes)
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == ',' || r == '\x07' || r < 0x20 {
			return -1
		}
		return r
	}, s)
}

// originName is the +freeq.at/origin value for a peer: its server name, sanitised, at most 64
// bytes.
func originName(peerDID string) string { return sanitizeName(sanitize(ServerName(peerDID), maxOrigin)) }

// sanitizeTags keeps at most maxTags client tags ("+" keys) with capped keys and values, minus
// the origin tag (the receiver sets it) and the internal delete event id.
func sanitizeTags(in map[string]string) map[string]string {
	out := make(map[string]string, len(in)+1)
	for k, v := range in {
		if len(out) >= maxTags {
			break
		}
		if !strings.HasPrefix(k, "+") || len(k) > maxTagKey || k == TagOrigin || strings.ContainsAny(k, " ;=\r\n\x00") {
			continue
		}
		out[k] = sanitize(v, maxTagValue)
	}
	return out
}

// TagOrigin marks a message that came from a peer server: its value is the peer's server name.
const TagOrigin = "+freeq.at/origin"
