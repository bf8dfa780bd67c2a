package confusable

import (
	"iter"
	"slices"
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
	// NickChangesSince returns the changes to the nicks in use and owned after a cursor, or ok
	// false when the index must be rebuilt from Sessions and NickOwners.
	NickChangesSince(c fsm.NickCursor) (changes iter.Seq[fsm.NickChange], now fsm.NickCursor, ok bool)
	Sessions() iter.Seq[fsm.Session]
	NickOwners() iter.Seq2[string, string]
}

// Holder is a nick in use or owned, as the index returns it.
type Holder struct {
	Nick    string // as its session shows it, or folded for an owned nick
	DID     string // the owner's DID, or the session's ("" for a guest)
	Session string // the session using it; "" for an owned nick
}

// Index maps skeletons to the nicks in use and owned. It follows the state change by change (the
// state's journal of nick changes: a session registered, renamed, authenticated or ended, a nick
// claimed or released), computing the skeletons of a nick once when it is added, and rebuilds
// from every session and owned nick only when it cannot (its first use, a restored state, or more
// changes behind than the state keeps). What it answers is exact for the state it is given.
type Index struct {
	// lock tier: taken under the state read lock; takes nothing
	mu         sync.Mutex
	cursor     fsm.NickCursor      // the state's journal up to here is in the index
	bySkeleton map[string][]Holder // skeleton → the holders with it
	holders    map[Holder][]string // holder → its skeletons
}

// LookAlike returns a holder whose nick nick could be mistaken for: a nick in use or owned with a
// skeleton in common with nick, other than nick itself (the exact nick is left to the state's own
// in-use and ownership rules) and not exempted by skip (nil: none is). The caller holds the
// state's read lock.
func (x *Index) LookAlike(st Nicks, nick string, skip func(Holder) bool) (Holder, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.update(st)
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

// update brings the index to the state: the changes since the cursor, or a rebuild.
func (x *Index) update(st Nicks) {
	changes, now, ok := st.NickChangesSince(x.cursor)
	if !ok {
		x.rebuild(st)
		x.cursor = now
		return
	}
	var last skeletons // a session's nick and the nick it claims come one after the other
	for ch := range changes {
		h := Holder{Nick: ch.Nick, DID: ch.DID, Session: ch.Session}
		if ch.Added {
			x.add(h, &last)
		} else {
			x.remove(h)
		}
	}
	x.cursor = now
}

// skeletons remembers the skeletons of the last nick added.
type skeletons struct {
	nick string
	sks  []string
}

func (m *skeletons) of(nick string) []string {
	if m.sks == nil || m.nick != nick {
		m.nick, m.sks = nick, skeletonsOf(nick, Skeleton)
	}
	return m.sks
}

// rebuild indexes every session's nick and every owned nick, taking the skeletons of the nicks
// already indexed from the index it replaces.
func (x *Index) rebuild(st Nicks) {
	known := make(map[string][]string, len(x.holders))
	for h, sks := range x.holders {
		known[h.Nick] = sks
	}
	x.bySkeleton, x.holders = map[string][]Holder{}, map[Holder][]string{}
	var last skeletons
	add := func(h Holder) {
		if sks, ok := known[h.Nick]; ok {
			last = skeletons{nick: h.Nick, sks: sks}
		}
		x.add(h, &last)
	}
	for se := range st.Sessions() {
		add(Holder{Nick: se.Nick, DID: se.DID, Session: se.ID})
	}
	for owned, did := range st.NickOwners() {
		add(Holder{Nick: owned, DID: did})
	}
}

func (x *Index) add(h Holder, memo *skeletons) {
	if h.Nick == "" {
		return
	}
	if x.holders == nil {
		x.bySkeleton, x.holders = map[string][]Holder{}, map[Holder][]string{}
	}
	if _, ok := x.holders[h]; ok {
		return
	}
	sks := memo.of(h.Nick)
	x.holders[h] = sks
	for _, sk := range sks {
		x.bySkeleton[sk] = append(x.bySkeleton[sk], h)
	}
}

func (x *Index) remove(h Holder) {
	sks, ok := x.holders[h]
	if !ok {
		return
	}
	delete(x.holders, h)
	for _, sk := range sks {
		list := x.bySkeleton[sk]
		if i := slices.Index(list, h); i >= 0 {
			list = slices.Delete(list, i, i+1)
		}
		if len(list) == 0 {
			delete(x.bySkeleton, sk)
		} else {
			x.bySkeleton[sk] = list
		}
	}
}
