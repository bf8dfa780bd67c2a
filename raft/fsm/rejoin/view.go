package rejoin

import (
	"slices"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// View reads the rejoin state of a state. Get it with Of inside Machine.Read; it is valid during
// that callback only, but what its methods return are copies that callers may keep.
type View struct{ s *Store }

// Of is the rejoin view of st.
func Of(st *fsm.State) View { return View{section.Of(st)} }

// Followed reports whether the DID is followed, and if so the channels remembered for it and
// when its entry last changed (unix ms).
func (v View) Followed(did string) (channels []string, at int64, ok bool) {
	if v.s == nil {
		return nil, 0, false
	}
	e := v.s.Accounts[did]
	if e == nil {
		return nil, 0, false
	}
	return slices.Clone(e.Channels), e.At, true
}

// Accounts is how many accounts are followed.
func (v View) Accounts() int {
	if v.s == nil {
		return 0
	}
	return len(v.s.Accounts)
}
