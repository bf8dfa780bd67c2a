package fsm

import "strings"

// Ban exceptions (+e) and the mute extban. A +e mask lifts +b for the users it matches; a +b entry
// of the form "m:<mask>" (ISUPPORT EXTBAN=,m) does not keep anyone out of the channel but stops
// the users its mask matches from sending to it unless they are voiced or above, and +e lifts it
// too. Both are matched like bans, "did:" masks included.

// mutePrefix starts a mute entry in the ban list.
const mutePrefix = "m:"

// muteMask returns the mask inside a mute entry and whether the entry is one.
func muteMask(entry string) (string, bool) {
	if len(entry) > len(mutePrefix) && strings.EqualFold(entry[:len(mutePrefix)], mutePrefix) {
		return entry[len(mutePrefix):], true
	}
	return "", false
}

// IsBanExcepted reports whether a user matches a +e mask.
func (c *Channel) IsBanExcepted(hostmask, did string) bool {
	return matchAny(c.BanExceptions, hostmask, did)
}

// IsMuted reports whether a user matches a mute entry (m:<mask>) of the ban list and no +e mask,
// plain or in the mute form (+e m:<mask> lifts a mute only). Whether voiced members and operators
// are exempt is the sender's check.
func (c *Channel) IsMuted(hostmask, did string) bool {
	for _, e := range c.Bans {
		if inner, mute := muteMask(e.Mask); mute && MatchMask(inner, hostmask, did) {
			return !c.IsBanExcepted(hostmask, did) && !c.muteExcepted(hostmask, did)
		}
	}
	return false
}

// muteExcepted reports whether a user matches a +e entry in the mute form, m:<mask>.
func (c *Channel) muteExcepted(hostmask, did string) bool {
	for _, e := range c.BanExceptions {
		if inner, mute := muteMask(e.Mask); mute && MatchMask(inner, hostmask, did) {
			return true
		}
	}
	return false
}
