package meta

import (
	"sort"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// Command types and result codes of metadata. Persisted: never renumber or reuse.
const (
	TypeSet   fsm.CommandType = 33
	TypeClear fsm.CommandType = 34

	ErrLimit           fsm.Code = 25 // FAIL METADATA LIMIT_REACHED: the target holds MaxKeys keys
	ErrKeyNotSet       fsm.Code = 26 // FAIL METADATA KEY_NOT_SET: removing a key that is not set
	ErrKeyNoPermission fsm.Code = 27 // FAIL METADATA KEY_NO_PERMISSION
)

// EvChanged is the event of metadata keys of a user (Event.Actor's) or of a channel
// (Event.Channel) set or removed; Event.Payload is the []Change (Changes reads it) and, for a
// user, Event.Channels are the user's channels.
const EvChanged fsm.EventKind = 41

// Limits of metadata, enforced in Apply (and advertised in the capability value).
const (
	MaxKeys       = 20  // keys per user or channel
	MaxValueBytes = 300 // bytes of one value (a METADATA line stays within 512 bytes)
	MaxKeyLen     = 64  // bytes of one key name
)

// section is the metadata's part of the state: nil until the first key.
var section = fsm.NewSection[Store]("metadata")

func init() { fsm.Register(module()) }

// module registers the metadata with the state machine.
func module() fsm.Module {
	return fsm.Module{
		Section: section,
		Codes: map[fsm.Code]string{
			ErrLimit: "metadata-limit", ErrKeyNotSet: "key-not-set", ErrKeyNoPermission: "key-no-permission",
		},
		Commands: map[fsm.CommandType]fsm.CommandSpec{
			TypeSet:   fsm.Handle("set-metadata", 0, setKey),
			TypeClear: fsm.Handle("clear-metadata", 0, clearKeys),
		},
		SessionEnded: func(a *fsm.Applier, se fsm.SessionRef) {
			if se.DID == "" {
				drop(a, guestOwner(se.ID))
			}
		},
		ChannelDeleted: func(a *fsm.Applier, name string) { drop(a, name) },
		ChannelRenamed: func(a *fsm.Applier, old, name string) {
			if m := section.Of(a.State()); m != nil {
				if keys, ok := m.Owners[old]; ok {
					delete(m.Owners, old)
					m.Owners[name] = keys
				}
			}
		},
	}
}

// Set sets (or with Delete, removes) one key on the session's own user, or on Channel (folded)
// when it is given.
type Set struct {
	Session string `json:"session"`
	Channel string `json:"channel,omitempty"`
	Key     string `json:"key"`
	Value   string `json:"value,omitempty"`
	Delete  bool   `json:"delete,omitempty"`
}

// Clear removes every key of the session's own user, or of Channel when it is given.
type Clear struct {
	Session string `json:"session"`
	Channel string `json:"channel,omitempty"`
}

func (Set) CommandType() fsm.CommandType   { return TypeSet }
func (Clear) CommandType() fsm.CommandType { return TypeClear }

// Change is one key changed by an EvChanged event (Deleted: removed).
type Change struct {
	Key     string
	Value   string
	Deleted bool
}

// Changes is what an EvChanged event changed (nil for another event).
func Changes(e *fsm.Event) []Change {
	if e.Kind != EvChanged {
		return nil
	}
	ch, _ := e.Payload.([]Change)
	return ch
}

// Store is every user's and channel's metadata: owner → key → value. An owner is a DID,
// "session:" and a guest's session id, or a folded channel name.
type Store struct {
	Owners map[string]map[string]string `json:"owners,omitempty"`
}

// ValidKey reports whether key is a valid key name: 1–MaxKeyLen bytes of a–z, 0–9 and "_.-/".
func ValidKey(key string) bool {
	if key == "" || len(key) > MaxKeyLen {
		return false
	}
	for i := 0; i < len(key); i++ {
		b := key[i]
		if !(b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '_' || b == '.' || b == '-' || b == '/') {
			return false
		}
	}
	return true
}

// guestOwner is the owner of a guest session's user metadata.
func guestOwner(id string) string { return "session:" + id }

// ownerOf is the owner of a session's user metadata: its DID, or the session itself for a guest.
func ownerOf(se *fsm.Session) string {
	if se.DID != "" {
		return se.DID
	}
	return guestOwner(se.ID)
}

// drop removes an owner's metadata (a guest session ended, a channel was deleted).
func drop(a *fsm.Applier, owner string) {
	if m := section.Of(a.State()); m != nil {
		delete(m.Owners, owner)
	}
}

// target resolves the owner a command changes and checks the session may change it. For a user
// it returns the event's channels (the session's, sorted).
func target(st *fsm.State, session, channel string) (se *fsm.Session, owner string, channels []string, code fsm.Code) {
	s, ok := st.Session(session)
	if !ok {
		return nil, "", nil, fsm.ErrNoSuchSession
	}
	se = &s
	if channel == "" {
		return se, ownerOf(se), se.ChannelNames(), fsm.OK
	}
	ch, ok := st.Channel(channel)
	if !ok {
		return se, "", nil, fsm.ErrNoSuchChannel
	}
	if !st.IsChannelOp(ch, se) {
		return se, "", nil, ErrKeyNoPermission
	}
	return se, channel, nil, fsm.OK
}

func setKey(a *fsm.Applier, c Set) fsm.Result {
	if !ValidKey(c.Key) || len(c.Value) > MaxValueBytes || (c.Delete && c.Value != "") {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	se, owner, channels, code := target(a.State(), c.Session, c.Channel)
	if code != fsm.OK {
		return fsm.Result{Code: code}
	}
	keys := Of(a.State()).Keys(owner)
	old, isSet := keys[c.Key]
	switch {
	case c.Delete && !isSet:
		return fsm.Result{Code: ErrKeyNotSet}
	case !c.Delete && isSet && old == c.Value:
		return fsm.Result{Code: fsm.NoChange}
	case !c.Delete && !isSet && len(keys) >= MaxKeys:
		return fsm.Result{Code: ErrLimit}
	}
	st := section.Make(a)
	if st.Owners == nil {
		st.Owners = map[string]map[string]string{}
	}
	m := st.Owners[owner]
	if c.Delete {
		delete(m, c.Key)
		if len(m) == 0 {
			delete(st.Owners, owner)
		}
	} else {
		if m == nil {
			m = map[string]string{}
			st.Owners[owner] = m
		}
		m[c.Key] = c.Value
	}
	a.Emit(fsm.Event{Kind: EvChanged, Actor: se.Ref(), Channel: c.Channel, Channels: channels,
		Payload: []Change{{Key: c.Key, Value: c.Value, Deleted: c.Delete}}})
	return fsm.Result{Code: fsm.OK}
}

func clearKeys(a *fsm.Applier, c Clear) fsm.Result {
	se, owner, channels, code := target(a.State(), c.Session, c.Channel)
	if code != fsm.OK {
		return fsm.Result{Code: code}
	}
	keys := Of(a.State()).Keys(owner)
	if len(keys) == 0 {
		return fsm.Result{Code: fsm.NoChange}
	}
	drop(a, owner)
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	changes := make([]Change, 0, len(names))
	for _, k := range names {
		changes = append(changes, Change{Key: k, Deleted: true})
	}
	a.Emit(fsm.Event{Kind: EvChanged, Actor: se.Ref(), Channel: c.Channel, Channels: channels, Payload: changes})
	return fsm.Result{Code: fsm.OK, List: names}
}
