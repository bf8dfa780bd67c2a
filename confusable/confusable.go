package confusable

import (
	"iter"
	"strings"
	"sync"

	"github.com/mtibben/confusables"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// Skeleton returns the UTS #39 skeleton of nick as given, lower-cased: nicks are compared
// case-insensitively, but only after the skeleton has seen the case the nick was written in.
func Skeleton(nick string) string {
	return strings.ToLower(confusables.Skeleton(nick))
}

// skeletonsOf returns the skeletons a nick is compared by: of the nick as given and of its
// lower-case form (one when they agree).
func skeletonsOf(nick string, memo func(string) string) []string {
	a := memo(nick)
	lower := strings.ToLower(nick)
	if lower == nick {
		return []string{a}
	}
	if b := memo(lower); b != a {
		return []string{a, b}
	}
	return []string{a}
}

// Nicks is what the index reads: *fsm.State under its read lock.
type Nicks interface {
	// Index changes whenever the state may have changed (the last applied log index).
	Index() uint64
	Sessions() iter.Seq[fsm.Session]
	NickOwners() iter.Seq2[string, string]
}

// Holder is a nick in use or owned, as the index returns it.
type Holder struct {
	Nick    string // as its session shows it, or folded for an owned nick
	DID     string // the owner's DID, or the session's ("" for a guest)
	Session string // the session using it; "" for an owned nick
}

// Index maps skeletons to the nicks in use and owned. It is rebuilt when the state has changed
// since it was built (a map look-up per nick; the skeleton of a nick is computed once while the
// nick stays in use or owned), so what it answers is exact for the state it is given.
type Index struct {
	// lock tier: taken under the state read lock; takes nothing
	mu         sync.Mutex
	built      bool
	index      uint64 // the state's Index when built
	bySkeleton map[string][]Holder
	memo       map[string]string // nick → Skeleton(nick)
}

// LookAlike returns a holder whose nick nick could be mistaken for: a nick in use or owned with a
// skeleton in common with nick, other than nick itself (the exact nick is left to the state's own
// in-use and ownership rules) and not exempted by skip (nil: none is). The caller holds the
// state's read lock.
func (x *Index) LookAlike(st Nicks, nick string, skip func(Holder) bool) (Holder, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.refresh(st)
	folded := fsm.Fold(nick)
	for _, sk := range skeletonsOf(nick, Skeleton) {
		for _, h := range x.bySkeleton[sk] {
			if fsm.Fold(h.Nick) != folded && (skip == nil || !skip(h)) {
				return h, true
			}
		}
	}
	return Holder{}, false
}

func (x *Index) refresh(st Nicks) {
	if x.built && st.Index() == x.index {
		return
	}
	memo := make(map[string]string, len(x.memo))
	skeleton := func(nick string) string {
		sk, ok := memo[nick]
		if !ok {
			if sk, ok = x.memo[nick]; !ok {
				sk = Skeleton(nick)
			}
			memo[nick] = sk
		}
		return sk
	}
	index := make(map[string][]Holder, len(x.bySkeleton))
	add := func(h Holder) {
		for _, sk := range skeletonsOf(h.Nick, skeleton) {
			index[sk] = append(index[sk], h)
		}
	}
	for se := range st.Sessions() {
		if se.Nick != "" {
			add(Holder{Nick: se.Nick, DID: se.DID, Session: se.ID})
		}
	}
	for owned, did := range st.NickOwners() {
		add(Holder{Nick: owned, DID: did})
	}
	x.memo, x.bySkeleton, x.index, x.built = memo, index, st.Index(), true
}
