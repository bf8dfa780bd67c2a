package irc

import (
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/mtibben/confusables"
	"golang.org/x/text/secure/precis"

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
//   - UTS #39 confusable detection (github.com/mtibben/confusables, Unicode 13 confusables.txt): a
//     nick whose skeleton equals the skeleton of a nick owned by another DID is refused, so that
//     "vict\u0456m" (Cyrillic i) cannot pass for an owned "victim". Nicks are compared after
//     lowercasing, as nicks are case-insensitive.
//
// Mixed-script restriction levels (UTS #39 §5) are not applied: the skeleton check covers the
// impersonation they guard against for owned nicks.

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

// skeletons indexes owned nicks by their UTS #39 skeleton, so that the confusable check costs a
// map look-up, not a pass over every owned nick. The index is rebuilt when the number of owned
// nicks changed (nicks are claimed far less often than they are checked) and at least every
// skeletonRebuild, and every candidate is checked against the state itself; the skeleton of each
// owned nick is computed once.
type skeletons struct {
	// lock tier 4: taken under the state read lock; takes nothing
	mu         sync.Mutex
	count      int       // owned nicks when the index was built
	built      time.Time // when it was built
	bySkeleton map[string][]string
	memo       map[string]string // folded owned nick → skeleton
}

const skeletonRebuild = 30 * time.Second

func nickSkeleton(nick string) string {
	return strings.ToLower(confusables.Skeleton(strings.ToLower(nick)))
}

// ownedNicks is what the skeleton index reads: *fsm.State under its read lock.
type ownedNicks interface {
	NickOwners() iter.Seq2[string, string]
	NickOwnerCount() int
}

// candidates returns the owned nicks whose skeleton is skeleton. The caller holds the state's
// read lock.
func (s *skeletons) candidates(st ownedNicks, skeleton string, now time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bySkeleton == nil || st.NickOwnerCount() != s.count || now.Sub(s.built) >= skeletonRebuild {
		memo := make(map[string]string, st.NickOwnerCount())
		index := make(map[string][]string, st.NickOwnerCount())
		for owned := range st.NickOwners() {
			sk, ok := s.memo[owned]
			if !ok {
				sk = nickSkeleton(owned)
			}
			memo[owned] = sk
			index[sk] = append(index[sk], owned)
		}
		s.memo, s.bySkeleton, s.count, s.built = memo, index, st.NickOwnerCount(), now
	}
	return s.bySkeleton[skeleton]
}

// confusableOwned returns an owned nick, other than nick itself, that nick could be mistaken for
// and that belongs to a DID other than did; "" when there is none. The exact nick is left to the
// state's own ownership rule.
func (s *Server) confusableOwned(nick, did string) string {
	folded := fsm.Fold(nick)
	want := nickSkeleton(folded)
	found := ""
	s.state.Read(func(st *fsm.State) {
		for _, owned := range s.nickSkeletons.candidates(st, want, time.Now()) {
			if owner := st.NickOwner(owned); owner != "" && owner != did && owned != folded {
				found = owned
				return
			}
		}
	})
	return found
}

// refuseNick checks a requested nick for c: when the nick is malformed or confusable with a nick
// owned by another identity, it adds the 432 refusal to rb and reports true.
func (c *client) refuseNick(nick string, rb *respBuf) bool {
	if why := nickProblem(nick); why != "" {
		rb.add(c.numericMsg("432", nick, why))
		return true
	}
	if owned := c.s.confusableOwned(nick, c.currentDID()); owned != "" {
		rb.add(c.numericMsg("432", nick, "Erroneous nickname: too like "+owned+", which is registered to another identity"))
		return true
	}
	return false
}
