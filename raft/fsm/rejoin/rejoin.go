package rejoin

import (
	"slices"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// TypeClaim is the command type of Claim. Persisted: never renumber or reuse.
const TypeClaim fsm.CommandType = 91

// Bounds of the remembered state, enforced in Apply.
const (
	MaxAccounts = 20000 // accounts followed
	MaxChannels = 100   // channels remembered for one account
)

// section is the rejoin state: nil until the first Claim.
var section = fsm.NewSection[Store]("rejoin")

func init() { fsm.Register(module()) }

func module() fsm.Module {
	return fsm.Module{
		Section:  section,
		Commands: map[fsm.CommandType]fsm.CommandSpec{TypeClaim: fsm.Handle("claim-rejoin", 2, claim)},
		SessionEndedIn: func(a *fsm.Applier, se fsm.SessionRef, channels []string) {
			if e := entry(a.State(), se.DID); e != nil {
				e.Channels = merge(e.Channels, channels)
				e.At = a.Time()
			}
		},
		MemberLeft: func(a *fsm.Applier, se fsm.SessionRef, channel string) {
			if e := entry(a.State(), se.DID); e != nil {
				if i, ok := slices.BinarySearch(e.Channels, channel); ok {
					e.Channels = slices.Delete(e.Channels, i, i+1)
				}
			}
		},
		ChannelRenamed: func(a *fsm.Applier, old, name string) {
			if s := section.Of(a.State()); s != nil {
				for _, e := range s.Accounts { // each entry on its own: the order changes nothing
					if i, ok := slices.BinarySearch(e.Channels, old); ok {
						e.Channels = merge(slices.Delete(e.Channels, i, i+1), []string{name})
					}
				}
			}
		},
	}
}

// Store is every followed account's entry, by DID.
type Store struct {
	Accounts map[string]*Entry `json:"accounts,omitempty"`
}

// Entry is one followed account: the channels (folded, sorted) its ended sessions were in, and
// when it last changed (a Claim or an ended session; unix ms).
type Entry struct {
	Channels []string `json:"channels,omitempty"`
	At       int64    `json:"at"`
}

// Claim is proposed when Session, authenticated as a DID, logs in on a node that rejoins: it
// answers (Result.List) the channels to join, folded and sorted: those remembered for the DID
// unless older than MaxAge, and those its other sessions are in, less those Session is in; and
// it clears the remembered channels and follows the DID from now on. Older entries of accounts
// without a session are dropped. MaxAge is in milliseconds, positive.
type Claim struct {
	Session string `json:"session"`
	MaxAge  int64  `json:"max_age"`
}

func (Claim) CommandType() fsm.CommandType { return TypeClaim }

// entry is the DID's entry in st, nil when the DID is not followed.
func entry(st *fsm.State, did string) *Entry {
	if s := section.Of(st); s != nil && did != "" {
		return s.Accounts[did]
	}
	return nil
}

// merge adds channels (sorted) to list (sorted), without duplicates, and keeps at most
// MaxChannels, the first in order.
func merge(list, channels []string) []string {
	for _, c := range channels {
		if i, ok := slices.BinarySearch(list, c); !ok {
			list = slices.Insert(list, i, c)
		}
	}
	if len(list) > MaxChannels {
		list = slices.Clip(list[:MaxChannels])
	}
	return list
}

func claim(a *fsm.Applier, c Claim) fsm.Result {
	if c.MaxAge <= 0 {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	st := a.State()
	me, ok := st.Session(c.Session)
	if !ok {
		return fsm.Result{Code: fsm.ErrNoSuchSession}
	}
	if me.DID == "" {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	cutoff := a.Time() - c.MaxAge
	var join []string
	if e := entry(st, me.DID); e != nil && e.At >= cutoff {
		join = merge(join, e.Channels)
	}
	for _, se := range st.SessionsByDID(me.DID) {
		if se.ID != c.Session {
			join = merge(join, se.ChannelNames())
		}
	}
	join = slices.DeleteFunc(join, func(name string) bool { return slices.Contains(me.ChannelNames(), name) })

	s := section.Make(a)
	if s.Accounts == nil {
		s.Accounts = map[string]*Entry{}
	}
	prune(st, s, cutoff, me.DID)
	if _, followed := s.Accounts[me.DID]; !followed && len(s.Accounts) >= MaxAccounts {
		evictOldest(s)
	}
	s.Accounts[me.DID] = &Entry{At: a.Time()}
	return fsm.Result{Code: fsm.OK, List: join}
}

// prune drops the entries older than cutoff of accounts without a session, except keep's. Which
// entries go depends on the state alone, not on the order of the map.
func prune(st *fsm.State, s *Store, cutoff int64, keep string) {
	var old []string
	for did, e := range s.Accounts {
		if did != keep && e.At < cutoff {
			old = append(old, did)
		}
	}
	if len(old) == 0 {
		return
	}
	live := map[string]bool{}
	for se := range st.Sessions() {
		live[se.DID] = true
	}
	for _, did := range old {
		if !live[did] {
			delete(s.Accounts, did)
		}
	}
}

// evictOldest drops the entry changed longest ago (the least DID among equals).
func evictOldest(s *Store) {
	oldest := ""
	for did, e := range s.Accounts {
		if o := s.Accounts[oldest]; o == nil || e.At < o.At || e.At == o.At && did < oldest {
			oldest = did
		}
	}
	delete(s.Accounts, oldest)
}
