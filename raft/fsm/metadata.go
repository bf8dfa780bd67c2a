package fsm

import (
	"sort"
	"strings"
)

// Metadata (IRCv3 draft/metadata-2): key/value pairs on users and channels, replicated so that
// every node answers METADATA GET and LIST alike and renders changes to its own sessions.
//
// A user's metadata belongs to its DID (profile data such as avatar, display-name or homepage
// outlives a connection and is shared by the DID's sessions); a guest's belongs to its session
// and ends with it. A channel's belongs to the channel (by folded name) and is deleted with it.
// Only the user itself sets its own keys; a channel's keys are set by its operators.

// Command types and result codes of metadata. Persisted: never renumber or reuse.
const (
	TypeSetMetadata   CommandType = 33
	TypeClearMetadata CommandType = 34

	ErrMetadataLimit   Code = 25 // FAIL METADATA LIMIT_REACHED: the target holds MaxMetadataKeys keys
	ErrKeyNotSet       Code = 26 // FAIL METADATA KEY_NOT_SET: removing a key that is not set
	ErrKeyNoPermission Code = 27 // FAIL METADATA KEY_NO_PERMISSION
)

// Limits of metadata, enforced in Apply (and advertised in the capability value).
const (
	MaxMetadataKeys       = 20  // keys per user or channel
	MaxMetadataValueBytes = 300 // bytes of one value (a METADATA line stays within 512 bytes)
	MaxMetadataKeyLen     = 64  // bytes of one key name
)

func init() {
	registerCommands(map[CommandType]CommandSpec{
		TypeSetMetadata:   spec("set-metadata", (*Applier).setMetadata),
		TypeClearMetadata: spec("clear-metadata", (*Applier).clearMetadata),
	})
	nameCode(ErrMetadataLimit, "metadata-limit")
	nameCode(ErrKeyNotSet, "key-not-set")
	nameCode(ErrKeyNoPermission, "key-no-permission")
}

// SetMetadata sets (or with Delete, removes) one key on the session's own user, or on Channel
// (folded) when it is given.
type SetMetadata struct {
	Session string `json:"session"`
	Channel string `json:"channel,omitempty"`
	Key     string `json:"key"`
	Value   string `json:"value,omitempty"`
	Delete  bool   `json:"delete,omitempty"`
}

// ClearMetadata removes every key of the session's own user, or of Channel when it is given.
type ClearMetadata struct {
	Session string `json:"session"`
	Channel string `json:"channel,omitempty"`
}

func (SetMetadata) CommandType() CommandType   { return TypeSetMetadata }
func (ClearMetadata) CommandType() CommandType { return TypeClearMetadata }

// MetadataChange is one key changed by an EvMetadata event (Deleted: removed).
type MetadataChange struct {
	Key     string
	Value   string
	Deleted bool
}

// MetadataStore is every user's and channel's metadata: owner → key → value. An owner is a DID,
// "session:" and a guest's session id, or a folded channel name.
type MetadataStore struct {
	Owners map[string]map[string]string `json:"owners,omitempty"`
}

// ValidMetadataKey reports whether key is a valid key name: 1–MaxMetadataKeyLen bytes of a–z,
// 0–9 and "_.-/".
func ValidMetadataKey(key string) bool {
	if key == "" || len(key) > MaxMetadataKeyLen {
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

// MetadataOwnerOf is the owner of a session's user metadata: its DID, or the session itself for a
// guest; "" when the session is gone.
func (s *State) MetadataOwnerOf(sessionID string) string {
	se := s.sessions[sessionID]
	if se == nil {
		return ""
	}
	return sessionMetadataOwner(se)
}

func sessionMetadataOwner(se *Session) string {
	if se.DID != "" {
		return se.DID
	}
	return "session:" + se.ID
}

// Metadata is a copy of an owner's keys (nil when it has none).
func (s *State) Metadata(owner string) map[string]string {
	if s.metadata == nil || len(s.metadata.Owners[owner]) == 0 {
		return nil
	}
	out := make(map[string]string, len(s.metadata.Owners[owner]))
	for k, v := range s.metadata.Owners[owner] {
		out[k] = v
	}
	return out
}

// dropMetadata removes an owner's metadata (a guest session ended, a channel was deleted).
func (s *State) dropMetadata(owner string) {
	if s.metadata != nil {
		delete(s.metadata.Owners, owner)
	}
}

// metadataTarget resolves the owner a command changes and checks the session may change it. For
// a user it returns the event's channels (the session's, sorted).
func (a *Applier) metadataTarget(session, channel string) (se *Session, owner string, channels []string, code Code) {
	se = a.st.sessions[session]
	if se == nil {
		return nil, "", nil, ErrNoSuchSession
	}
	if channel == "" {
		return se, sessionMetadataOwner(se), sortedKeys(se.channels), OK
	}
	ch := a.st.channels[channel]
	if ch == nil {
		return se, "", nil, ErrNoSuchChannel
	}
	if !a.st.isChannelOp(ch, se) {
		return se, "", nil, ErrKeyNoPermission
	}
	return se, channel, nil, OK
}

func (a *Applier) setMetadata(c SetMetadata) Result {
	if !ValidMetadataKey(c.Key) || len(c.Value) > MaxMetadataValueBytes || (c.Delete && c.Value != "") {
		return Result{Code: ErrInvalid}
	}
	se, owner, channels, code := a.metadataTarget(c.Session, c.Channel)
	if code != OK {
		return Result{Code: code}
	}
	keys := a.st.Metadata(owner)
	old, set := keys[c.Key]
	switch {
	case c.Delete && !set:
		return Result{Code: ErrKeyNotSet}
	case !c.Delete && set && old == c.Value:
		return Result{Code: NoChange}
	case !c.Delete && !set && len(keys) >= MaxMetadataKeys:
		return Result{Code: ErrMetadataLimit}
	}
	if a.st.metadata == nil {
		a.st.metadata = &MetadataStore{}
	}
	if a.st.metadata.Owners == nil {
		a.st.metadata.Owners = map[string]map[string]string{}
	}
	m := a.st.metadata.Owners[owner]
	if c.Delete {
		delete(m, c.Key)
		if len(m) == 0 {
			delete(a.st.metadata.Owners, owner)
		}
	} else {
		if m == nil {
			m = map[string]string{}
			a.st.metadata.Owners[owner] = m
		}
		m[c.Key] = c.Value
	}
	a.emit(Event{Kind: EvMetadata, Actor: se.Ref(), Channel: c.Channel, Channels: channels,
		Metadata: []MetadataChange{{Key: c.Key, Value: c.Value, Deleted: c.Delete}}})
	return Result{Code: OK}
}

func (a *Applier) clearMetadata(c ClearMetadata) Result {
	se, owner, channels, code := a.metadataTarget(c.Session, c.Channel)
	if code != OK {
		return Result{Code: code}
	}
	keys := a.st.Metadata(owner)
	if len(keys) == 0 {
		return Result{Code: NoChange}
	}
	a.st.dropMetadata(owner)
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	changes := make([]MetadataChange, 0, len(names))
	for _, k := range names {
		changes = append(changes, MetadataChange{Key: k, Deleted: true})
	}
	a.emit(Event{Kind: EvMetadata, Actor: se.Ref(), Channel: c.Channel, Channels: channels, Metadata: changes})
	return Result{Code: OK, List: names}
}

// EvMetadata is the event of a metadata key of a user (Target.DID) or channel (Channel) set or
// cleared (draft/metadata-2).
const EvMetadata EventKind = 41

// MetadataTarget is what a METADATA target names, as seen by the session asking.
type MetadataTarget struct {
	Nick     string // a user's nick ("" for a channel)
	Channel  string // a channel's folded name ("" for a user)
	Owner    string // whose metadata it is (see MetadataOwnerOf)
	Self     bool   // the asking session's own user
	Op       bool   // the asking session is an operator of the channel
	Readable bool   // the asking session may see the channel
	Members  int    // the channel's members
}

// ResolveMetadataTarget resolves target ("*" for oneself, a nick or a channel) for session id
// (authenticated as did); ok is false when it names nothing.
func (s *State) ResolveMetadataTarget(target, id, did string) (t MetadataTarget, ok bool) {
	me := s.sessions[id]
	if target == "*" || (me != nil && Fold(target) == Fold(me.Nick)) {
		if me == nil {
			return t, false
		}
		return MetadataTarget{Nick: me.Nick, Owner: sessionMetadataOwner(me), Self: true, Readable: true}, true
	}
	if target != "" && (target[0] == '#' || target[0] == '&') {
		ch := s.channels[Fold(target)]
		if ch == nil {
			return t, false
		}
		return MetadataTarget{Channel: ch.Name, Owner: ch.Name, Op: me != nil && s.isChannelOp(ch, me),
			Readable: ch.CanRead(id, did), Members: len(ch.members)}, true
	}
	se := s.sessionByNick(target)
	if se == nil {
		return t, false
	}
	return MetadataTarget{Nick: se.Nick, Owner: sessionMetadataOwner(se), Readable: true}, true
}

// NickMetadata is one user's nick and metadata.
type NickMetadata struct {
	Nick string
	Keys map[string]string
}

// MembersMetadata lists the members of a channel that have metadata, with it, sorted by nick.
func (s *State) MembersMetadata(channel string) []NickMetadata {
	ch := s.channels[channel]
	if ch == nil || s.metadata == nil {
		return nil
	}
	var out []NickMetadata
	for id := range ch.members {
		se := s.sessions[id]
		if se == nil {
			continue
		}
		if keys := s.Metadata(sessionMetadataOwner(se)); keys != nil {
			out = append(out, NickMetadata{Nick: se.Nick, Keys: keys})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Nick < out[j].Nick })
	return out
}

// SessionIDsOfOwner lists the sessions whose user metadata belongs to owner (a DID's sessions, or
// a guest's own).
func (s *State) SessionIDsOfOwner(owner string) []string {
	if id, guest := strings.CutPrefix(owner, "session:"); guest {
		if s.sessions[id] != nil {
			return []string{id}
		}
		return nil
	}
	var out []string
	for _, se := range s.sessionsByDID(owner) {
		out = append(out, se.ID)
	}
	return out
}
