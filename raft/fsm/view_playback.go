package fsm

import (
	"strconv"
	"strings"
)

// ChannelLogStart answers the log index of the entry that created a channel's current
// incarnation (see Applier.incarnation), so that a reader can tell the channel's own state
// changes from those of an earlier channel of the same name: every change to this incarnation
// was made by an entry at or after that index. It is 0 for a channel whose incarnation predates
// incarnations, and ok is false when no such channel exists.
func (s *State) ChannelLogStart(name string) (index uint64, ok bool) {
	c := s.channels[name]
	if c == nil {
		return 0, false
	}
	return incarnationIndex(c.Incarnation), true
}

// incarnationIndex is the log index an incarnation name carries ("<time>.<index>", base 36);
// 0 when it carries none.
func incarnationIndex(inc string) uint64 {
	_, idx, found := strings.Cut(inc, ".")
	if !found {
		return 0
	}
	n, err := strconv.ParseUint(idx, 36, 64)
	if err != nil {
		return 0
	}
	return n
}
