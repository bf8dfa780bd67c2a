package irc

import (
	"golang.org/x/text/secure/precis"

	"github.com/palaver-chat/palaver/confusable"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// Nick rules beyond validNick's syntax, following published Unicode profiles rather than a
// hand-made list:
//
//   - RFC 8266's PRECIS Nickname profile (golang.org/x/text/secure/precis): a nick must come out of
//     the profile unchanged. That refuses control characters (C0 and C1, e.g. NEL), default-
//     ignorable and invisible characters (zero-width spaces and joiners, the BOM, bidirectional
//     controls such as RLO), unassigned code points, and any nick the profile would map (non-ASCII
//     spaces such as NBSP, fullwidth and other compatibility forms).
//   - UTS #39 confusable detection (package confusable): a nick whose skeleton equals the skeleton
//     of a nick in use by another session (guests included, on any node) or owned by another DID
//     is refused, so that "vict\u0456m" (Cyrillic i) cannot pass for "victim", nor "paypaI"
//     (capital I) for "paypal". The skeleton is taken of the nick as given and of its lower case.
//
// Mixed-script restriction levels (UTS #39 §5) are not applied: the skeleton check covers the
// impersonation they guard against.

// nickProblem returns why nick is refused (a text for 432), or "" when it is acceptable.
func nickProblem(nick string) string {
	if !validNick(nick) {
		return "Erroneous nickname"
	}
	if prepared, err := precis.Nickname.String(nick); err != nil || prepared != nick {
		return "Erroneous nickname: control, invisible, bidirectional-formatting or compatibility characters are not allowed"
	}
	return ""
}

// confusableNick returns a nick in use or owned that nick could be mistaken for, other than nick
// itself, that is neither c's own session's nor held by c's DID (a DID may take look-alikes of its
// own nicks); "" when there is none.
func (c *client) confusableNick(nick string) (holder string, owned bool) {
	did := c.currentDID()
	c.s.state.Read(func(st *fsm.State) {
		h, ok := c.s.nickSkeletons.LookAlike(st, nick, func(h confusable.Holder) bool {
			return h.Session == c.id || (did != "" && h.DID == did)
		})
		if ok {
			holder, owned = h.Nick, h.Session == ""
		}
	})
	return holder, owned
}

// refuseNick checks a requested nick for c: when the nick is malformed or confusable with a nick
// in use by another session or owned by another identity, it adds the 432 refusal to rb and reports true.
func (c *client) refuseNick(nick string, rb *respBuf) bool {
	if why := nickProblem(nick); why != "" {
		rb.add(c.numericMsg("432", nick, why))
		return true
	}
	if holder, owned := c.confusableNick(nick); holder != "" {
		why := "Erroneous nickname: too like " + holder + ", which is in use"
		if owned {
			why = "Erroneous nickname: too like " + holder + ", which is registered to another identity"
		}
		rb.add(c.numericMsg("432", nick, why))
		return true
	}
	return false
}
