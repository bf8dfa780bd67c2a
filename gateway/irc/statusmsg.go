package irc

import (
	"strings"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// STATUSMSG (ISUPPORT STATUSMSG=@%+): PRIVMSG, NOTICE or TAGMSG to "@#chan" (or "%#chan",
// "+#chan") reaches only the channel's members holding that prefix or a higher one, on every node.
// Such a message is live only: it is not stored, so it is in no history, and it crosses to the
// other nodes of the deployment as an ephemeral event (eventstore.Message.Status), best effort
// like a typing notification. Edits, deletes and reactions cannot target a status message.
//
// Why not in history: a status message's audience is the prefixes held when it was sent. History
// cannot keep that promise: prefixes change afterwards (a member voiced or opped later would read
// what was said before it was trusted), the chathistory batch names the channel, not "@#chan",
// and the REST history, search and export have readers with no prefix at all. So nobody reads a
// status message back, and a reader without the prefix can never see it, on any surface.

// statusPrefixes are the STATUSMSG prefixes, lowest rank first.
const statusPrefixes = "+%@"

// splitStatus splits a "@#chan" style target into its prefix and channel; status is "" for any
// other target.
func splitStatus(target string) (status, channel string) {
	if len(target) > 2 && strings.IndexByte(statusPrefixes, target[0]) >= 0 && (target[1] == '#' || target[1] == '&') {
		return target[:1], target[1:]
	}
	return "", target
}

// statusRank is the rank a prefix needs: 1 voice, 2 halfop, 3 op; 0 for "".
func statusRank(status string) int {
	if status == "" {
		return 0
	}
	return strings.IndexByte(statusPrefixes, status[0]) + 1
}

// memberRank is a member's highest prefix as a rank.
func memberRank(m fsm.Member) int {
	switch {
	case m.Op:
		return 3
	case m.HalfOp:
		return 2
	case m.Voice:
		return 1
	}
	return 0
}

// statusMembers lists the local clients of a channel whose prefix reaches status, but for except.
func (s *Server) statusMembers(channel, status, except string) []*client {
	need := statusRank(status)
	var out []*client
	s.state.Read(func(st *fsm.State) {
		for id, m := range st.LocalMembers(channel) {
			if id == except || memberRank(m) < need {
				continue
			}
			if rc := s.localClient(id); rc != nil {
				out = append(out, rc)
			}
		}
	})
	return out
}
