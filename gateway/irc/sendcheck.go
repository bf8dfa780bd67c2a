package irc

import (
	"sort"
	"time"
)

// FloodState is a session's message flood bucket as the IRC edge holds it.
type FloodState struct {
	// Local is true when the session is connected to this node (only then is its bucket known).
	Local bool
	// Limited is false when the node runs without flood limits.
	Limited bool
	// Tokens is the messages the bucket allows now; a message needs one.
	Tokens float64
}

// MessageFlood reads, without taking anything, the message bucket of session sid (PRIVMSG and
// NOTICE: 5 per 2 s), for tools that predict a send (chat.Check's RateLimited).
func (s *Server) MessageFlood(sid string) FloodState {
	c := s.localClient(sid)
	if c == nil {
		return FloodState{}
	}
	f := FloodState{Local: true}
	if l := c.flood.messages; l != nil {
		f.Limited, f.Tokens = true, l.TokensAt(time.Now())
	}
	return f
}

// Capabilities lists the IRCv3 capabilities the edge offers, sorted.
func Capabilities() []string {
	out := make([]string, 0, len(capNames))
	for n := range capNames {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
