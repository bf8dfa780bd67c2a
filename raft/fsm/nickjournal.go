package fsm

import (
	"iter"
	"sync/atomic"
)

// NickChange is one change to the nicks in use or owned: a holder added or removed. A session's
// holder is its nick as the session shows it, its DID ("" for a guest) and its id; an owned
// nick's holder is the folded nick and its owner, without a session. A session whose DID changes
// is removed and added again.
type NickChange struct {
	Added   bool
	Nick    string
	DID     string
	Session string
}

// NickCursor is a reader's place in a state's journal of nick changes. The zero cursor is of no
// state: a reader starting from it rebuilds.
type NickCursor struct{ epoch, seq uint64 }

// nickJournalKeep is how many of the latest nick changes a state keeps for readers that catch up
// change by change; a reader further behind rebuilds from Sessions and NickOwners.
const nickJournalKeep = 4096

// nickEpochs numbers the states' journals, so that a cursor of one state (before a restore, say)
// is never taken for a place in another's.
var nickEpochs atomic.Uint64

// nickJournal keeps the latest changes to the nicks in use and owned (package confusable keeps
// its look-alike index by them). Derived and never encoded: a state restored from a snapshot
// starts a new journal, and readers rebuild.
type nickJournal struct {
	epoch uint64
	next  uint64       // the sequence number of the next change
	log   []NickChange // changes next-len(log) … next-1
}

func newNickJournal() nickJournal { return nickJournal{epoch: nickEpochs.Add(1)} }

// noteNick records a holder added or removed. Apply calls it for every change to a session's nick
// or DID, to the sessions themselves and to nick ownership.
func (s *State) noteNick(added bool, nick, did, session string) {
	if nick == "" {
		return
	}
	j := &s.nickJournal
	if len(j.log) >= 2*nickJournalKeep {
		n := copy(j.log, j.log[len(j.log)-nickJournalKeep:])
		clear(j.log[n:])
		j.log = j.log[:n]
	}
	j.log = append(j.log, NickChange{Added: added, Nick: nick, DID: did, Session: session})
	j.next++
}

// NickChangesSince returns the changes to the nicks in use and owned made after cursor, in order,
// and the cursor past them. ok is false when they are not all kept (the cursor is of another
// state, the zero cursor, or too far behind): the reader then rebuilds from Sessions and
// NickOwners and goes on from the returned cursor. The changes are read inside Machine.Read.
func (s *State) NickChangesSince(c NickCursor) (changes iter.Seq[NickChange], now NickCursor, ok bool) {
	j := &s.nickJournal
	now = NickCursor{epoch: j.epoch, seq: j.next}
	first := j.next - uint64(len(j.log))
	if c.epoch != j.epoch || c.seq < first || c.seq > j.next {
		return func(func(NickChange) bool) {}, now, false
	}
	log := j.log[len(j.log)-int(j.next-c.seq):]
	return func(yield func(NickChange) bool) {
		for _, ch := range log {
			if !yield(ch) {
				return
			}
		}
	}, now, true
}
