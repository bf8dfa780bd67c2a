package fsm

import "sort"

// Limits enforced inside Apply so that every node agrees on them.
const (
	MaxChannelsPerSession = 100
	MaxListEntries        = 500 // per ban or invite-exception list
	MaxNickLen            = 64
	MaxChannelLen         = 64
	MaxTopicLen           = 512
	MaxFavorites          = 200
	MaxPins               = 50   // per channel; pinning beyond drops the oldest
	requestMemory         = 4096 // request ids remembered for exactly-once application
)

// State is the whole replicated control-plane state. Gateways read it under Machine.Read and must
// not keep references to its maps or structs after the callback returns.
type State struct {
	sessions   map[string]*Session              // by session id
	nicks      map[string]string                // folded nick → session id of the session using it now
	nickOwners map[string]string                // folded nick → owning DID (persistent)
	didNicks   map[string]string                // DID → the folded nick it owns
	channels   map[string]*Channel              // folded channel name → channel
	tokens     map[string]string                // bearer token hash → session id
	favorites  map[string][]string              // DID → favourite channel names
	keys       map[string]map[string]*KeyRecord // DID → kid → key (public keys only)
	// RemoteMembers are users of peer servers in linked channels ("<peer DID> <folded nick>" →
	// member), kept while the link is up (see federation.go); nil until the first one.
	remoteMembers map[string]*RemoteMember
	// ReadMarkers are DID → target → unix ms (readmarkers.go); nil until the first one.
	readMarkers map[string]map[string]int64
	// redirects are the former names of renamed channels (redirects.go); nil until the first rename.
	redirects *Redirects
	// logins are client passwords and hosted accounts (logins.go); nil until the first password.
	logins *Logins
	// nodeKeys pins each node of the cluster to its key: node id → SHA-256 of its public key
	// (nodekeys.go); nil until the first pin.
	nodeKeys map[string][]byte

	// founded counts the channels each DID is the founder of (MaxFoundedPerDID): derived from
	// Channels, never encoded, rebuilt by normalize.
	founded map[string]int
	// node names this node (Machine.SetLocalNode) and local indexes the members of each channel
	// whose sessions are on it (channel → session id → member, sharing the channel's Member
	// values): derived, never encoded, kept by join and removeMember, rebuilt by normalize.
	node  string
	local map[string]map[string]*Member
	// localVersion changes with every change to local (LocalMembersVersion): derived, never
	// encoded, carried over by Restore so that it never repeats within one Machine.
	localVersion uint64
	// nickJournal keeps the latest changes to the nicks in use and owned, for readers that
	// index them (nickjournal.go): derived, never encoded, new with every State.
	nickJournal nickJournal

	// sections are the registered modules' parts of the state, by Section slot (module.go).
	sections []any

	requests     map[string]Result // request id → result, for exactly-once application
	requestOrder []string
	index        uint64 // last applied Raft index
}

// Session is one connected, registered client on some node.
type Session struct {
	ID          string          `json:"id"`
	Node        string          `json:"node"`
	Incarnation string          `json:"incarnation"` // the node process that owns the connection
	Nick        string          `json:"nick"`        // as the user typed it
	User        string          `json:"user"`
	Host        string          `json:"host"` // cloak
	Realname    string          `json:"realname"`
	DID         string          `json:"did,omitempty"`
	TokenHash   string          `json:"token_hash,omitempty"`
	Away        string          `json:"away,omitempty"`
	Oper        bool            `json:"oper,omitempty"`
	Secure      bool            `json:"secure,omitempty"`
	SigningKID  string          `json:"signing_kid,omitempty"` // session key registered with MSGSIG
	Bot         bool            `json:"bot,omitempty"`         // user mode +B (botmode.go)
	Invisible   bool            `json:"invisible,omitempty"`   // user mode +i (invisible.go)
	ConnectedAt int64           `json:"connected_at"`          // unix ms
	channels    map[string]bool // folded channel names
}

// Hostmask is nick!user@host.
func (s *Session) Hostmask() string { return s.Nick + "!" + s.User + "@" + s.Host }

// Ref is a copy of the identifying fields of a session, carried in events so that a gateway can
// render lines even after the session is gone.
func (s *Session) Ref() SessionRef {
	return SessionRef{ID: s.ID, Node: s.Node, Nick: s.Nick, User: s.User, Host: s.Host, DID: s.DID, Realname: s.Realname}
}

// SessionRef identifies a session in events and results.
type SessionRef struct {
	ID       string `json:"id"`
	Node     string `json:"node"`
	Nick     string `json:"nick"`
	User     string `json:"user"`
	Host     string `json:"host"`
	DID      string `json:"did,omitempty"`
	Realname string `json:"realname,omitempty"`
}

// Hostmask is nick!user@host.
func (r SessionRef) Hostmask() string { return r.Nick + "!" + r.User + "@" + r.Host }

// Channel is one channel's replicated state.
type Channel struct {
	Name       string `json:"name"` // folded
	CreatedAt  int64  `json:"created_at"`
	Topic      string `json:"topic,omitempty"`
	TopicBy    string `json:"topic_by,omitempty"`
	TopicAt    int64  `json:"topic_at,omitempty"` // unix ms
	InviteOnly bool   `json:"i,omitempty"`
	TopicLock  bool   `json:"t,omitempty"`
	NoExternal bool   `json:"n,omitempty"`
	Moderated  bool   `json:"m,omitempty"`
	Encrypted  bool   `json:"E,omitempty"`
	Key        string `json:"k,omitempty"`
	Limit      int    `json:"l,omitempty"` // +l: most members (0: no limit)
	Secret     bool   `json:"s,omitempty"` // +s: hidden from those outside
	NoCTCP     bool   `json:"C,omitempty"` // +C: no CTCP but ACTION
	FounderDID string `json:"founder_did,omitempty"`
	didOps     map[string]bool
	Bans       []ListEntry        `json:"bans,omitempty"`
	Exceptions []ListEntry        `json:"exceptions,omitempty"` // +I invite exceptions
	invites    map[string]int64   // InviteKey → unix ms
	members    map[string]*Member // by session id
	Pins       []PinEntry         `json:"pins,omitempty"` // newest first

	// Incarnation names this life of the channel: a channel deleted and created again under the
	// same name is a new incarnation, and its readers see only what the history rule allows (see
	// MessageVisible). "" for a channel created before incarnations existed.
	Incarnation string `json:"incarnation,omitempty"`
	// EmptySince is when the channel was last left without members (unix ms; 0 while it has
	// members): ExpireChannels deletes it after a while.
	EmptySince int64 `json:"empty_since,omitempty"`

	// BanExceptions is the +e list: a user matching one of its masks is not held by +b (nor by a
	// mute entry, see IsMuted).
	BanExceptions []ListEntry `json:"ban_exceptions,omitempty"`
}

// PinEntry is one pinned message.
type PinEntry struct {
	MsgID       string `json:"msgid"` // root msgid
	PinnedBy    string `json:"pinned_by"`
	PinnedByDID string `json:"pinned_by_did,omitempty"`
	PinnedAt    int64  `json:"pinned_at"` // unix ms
}

// ListEntry is one ban, ban-exception or invite-exception mask.
type ListEntry struct {
	Mask  string `json:"mask"`
	SetBy string `json:"set_by"`
	SetAt int64  `json:"set_at"` // unix ms
}

// Member holds a session's prefixes in one channel.
type Member struct {
	Op       bool  `json:"o,omitempty"`
	HalfOp   bool  `json:"h,omitempty"`
	Voice    bool  `json:"v,omitempty"`
	JoinedAt int64 `json:"joined_at"`
}

// Prefixes returns the member's prefix characters, highest first; all of them when multi is set,
// otherwise only the highest.
func (m Member) Prefixes(multi bool) string {
	var b []byte
	if m.Op {
		b = append(b, '@')
	}
	if m.HalfOp {
		b = append(b, '%')
	}
	if m.Voice {
		b = append(b, '+')
	}
	if !multi && len(b) > 1 {
		b = b[:1]
	}
	return string(b)
}

// ModeString is the channel's mode letters as `+ntimEk` in that order, without the key itself.
func (c *Channel) ModeString() string {
	b := []byte{'+'}
	for _, f := range []struct {
		on bool
		l  byte
	}{{c.NoExternal, 'n'}, {c.TopicLock, 't'}, {c.InviteOnly, 'i'}, {c.Moderated, 'm'}, {c.Encrypted, 'E'}, {c.Secret, 's'}, {c.NoCTCP, 'C'}, {c.Key != "", 'k'}, {c.Limit > 0, 'l'}} {
		if f.on {
			b = append(b, f.l)
		}
	}
	return string(b)
}

// Discoverable reports whether anonymous readers may see the channel: no +i, +k, +E or +s.
func (c *Channel) Discoverable() bool {
	return !c.InviteOnly && c.Key == "" && !c.Encrypted && !c.Secret
}

// MemberIDs returns the channel's member session ids in sorted order.
func (c *Channel) MemberIDs() []string {
	ids := make([]string, 0, len(c.members))
	for id := range c.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// IsBanned reports whether a user matches a ban mask and no ban exception (+e); invite exceptions
// do not lift bans, and mute entries (m:mask) do not ban (see IsMuted).
func (c *Channel) IsBanned(hostmask, did string) bool {
	for _, e := range c.Bans {
		if _, mute := muteMask(e.Mask); !mute && MatchMask(e.Mask, hostmask, did) {
			return !c.IsBanExcepted(hostmask, did)
		}
	}
	return false
}

// IsExcepted reports whether a user matches a +I mask.
func (c *Channel) IsExcepted(hostmask, did string) bool {
	return matchAny(c.Exceptions, hostmask, did)
}

func matchAny(list []ListEntry, hostmask, did string) bool {
	for _, e := range list {
		if MatchMask(e.Mask, hostmask, did) {
			return true
		}
	}
	return false
}

// InviteKey is the key an invite is filed under: the DID for an authenticated user (so the invite
// survives reconnects), else the session id.
func InviteKey(sessionID, did string) string {
	if did != "" {
		return "did:" + did
	}
	return "sid:" + sessionID
}

// NewState returns an empty state.
func NewState() *State {
	return &State{
		sessions:   map[string]*Session{},
		nicks:      map[string]string{},
		nickOwners: map[string]string{},
		didNicks:   map[string]string{},
		channels:   map[string]*Channel{},
		tokens:     map[string]string{},
		favorites:  map[string][]string{},
		keys:       map[string]map[string]*KeyRecord{},
		requests:   map[string]Result{},
		founded:    map[string]int{},

		nickJournal: newNickJournal(),
	}
}

// KeyRecord is a public signing key filed under a DID. Times are unix seconds.
type KeyRecord struct {
	KID          string `json:"kid"`
	PublicKey    []byte `json:"public_key"`
	Source       string `json:"source"`
	Purpose      string `json:"purpose,omitempty"`
	RegisteredAt int64  `json:"registered_at"`
	LastSeenAt   int64  `json:"last_seen_at"`
	RemovedAt    int64  `json:"removed_at,omitempty"`
	ExpiresAt    int64  `json:"expires_at,omitempty"`
}

// EndedAt is when the key stopped counting: the earlier of retirement and expiry, 0 if neither.
func (k *KeyRecord) EndedAt() int64 {
	end := k.RemovedAt
	if k.ExpiresAt != 0 && (end == 0 || k.ExpiresAt < end) {
		end = k.ExpiresAt
	}
	return end
}

// Live reports whether the key is neither retired nor expired at unix second now.
func (k *KeyRecord) Live(now int64) bool {
	return k.RemovedAt == 0 && (k.ExpiresAt == 0 || now < k.ExpiresAt)
}

// key returns the key filed under did with kid, or nil, for Apply to change.
func (s *State) key(did, kid string) *KeyRecord {
	return s.keys[did][kid]
}

// normalize replaces nil maps after decoding so Apply never writes to a nil map.
func (s *State) normalize() {
	if s.sessions == nil {
		s.sessions = map[string]*Session{}
	}
	if s.nicks == nil {
		s.nicks = map[string]string{}
	}
	if s.nickOwners == nil {
		s.nickOwners = map[string]string{}
	}
	if s.didNicks == nil {
		s.didNicks = map[string]string{}
	}
	if s.channels == nil {
		s.channels = map[string]*Channel{}
	}
	if s.tokens == nil {
		s.tokens = map[string]string{}
	}
	if s.favorites == nil {
		s.favorites = map[string][]string{}
	}
	if s.requests == nil {
		s.requests = map[string]Result{}
	}
	if s.keys == nil {
		s.keys = map[string]map[string]*KeyRecord{}
	}
	for _, se := range s.sessions {
		if se.channels == nil {
			se.channels = map[string]bool{}
		}
	}
	s.founded = map[string]int{}
	for _, c := range s.channels {
		if c.members == nil {
			c.members = map[string]*Member{}
		}
		if c.FounderDID != "" {
			s.founded[c.FounderDID]++
		}
	}
	s.rebuildLocal()
}

// SessionByNick returns a copy of the session currently using a nick; ok is false when none is.
func (s *State) SessionByNick(nick string) (se Session, ok bool) {
	return sessionCopy(s.sessionByNick(nick))
}

// sessionByNick is the session currently using a nick, or nil, for Apply.
func (s *State) sessionByNick(nick string) *Session {
	if id, ok := s.nicks[Fold(nick)]; ok {
		return s.sessions[id]
	}
	return nil
}

// SessionsByDID returns copies of the sessions authenticated as did, sorted by id.
func (s *State) SessionsByDID(did string) []Session {
	var out []Session
	for _, se := range s.sessionsByDID(did) {
		out = append(out, *se)
	}
	return out
}

// sessionsByDID returns the sessions authenticated as did, sorted by id, for Apply.
func (s *State) sessionsByDID(did string) []*Session {
	var out []*Session
	for _, se := range s.sessions {
		if se.DID == did {
			out = append(out, se)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// SessionByToken resolves a bearer token hash to a copy of its live session; ok is false when
// the token names none.
func (s *State) SessionByToken(hash string) (se Session, ok bool) {
	if id, found := s.tokens[hash]; found {
		return sessionCopy(s.sessions[id])
	}
	return Session{}, false
}

// isChannelOp reports whether a session may act as an operator of c: a channel op, the founder by
// DID, or a server operator.
func (s *State) isChannelOp(c *Channel, se *Session) bool {
	if se == nil {
		return false
	}
	if se.Oper || (se.DID != "" && se.DID == c.FounderDID) {
		return true
	}
	m := c.members[se.ID]
	return m != nil && m.Op
}

// CanRead reports whether a reader may see a channel's members, lists and history: anyone for a
// discoverable channel; otherwise a member session, the founder's DID, or a DID op. sessionID may
// be empty (a REST reader known only by DID); operators are handled by the caller.
func (c *Channel) CanRead(sessionID, did string) bool {
	if c.Discoverable() {
		return true
	}
	if sessionID != "" && c.members[sessionID] != nil {
		return true
	}
	if did != "" && (did == c.FounderDID || c.didOps[did]) {
		return true
	}
	return false
}

// MessageVisible is the history rule: a message stored in a channel's venue during incarnation inc
// (public when the channel was discoverable as it was written) is served through the channel as it
// is now when the channel exists and the message belongs to its current incarnation, or was public
// when written. A restricted message of an earlier incarnation is never served again: whoever
// creates a channel of the same name does not inherit it. Readers still need the channel's read
// access (CanRead, MayRead) on top of this.
func (c *Channel) MessageVisible(inc string, public bool) bool {
	return c != nil && (public || inc == c.Incarnation)
}

// ChannelScope answers, for a channel venue, the channel's current incarnation and whether it is
// discoverable now; ok is false when no such channel exists.
func (s *State) ChannelScope(venue string) (incarnation string, public, ok bool) {
	c := s.channels[venue]
	if c == nil {
		return "", false, false
	}
	return c.Incarnation, c.Discoverable(), true
}

// mayRead reports whether a reader known only by DID ("" = anonymous) may read a channel: anyone
// for a discoverable channel; for a restricted one the founder, a DID op, or the DID of a session
// that is a member now.
func (s *State) mayRead(c *Channel, did string) bool {
	if c.CanRead("", did) {
		return true
	}
	if did == "" {
		return false
	}
	for id := range c.members {
		if se := s.sessions[id]; se != nil && se.DID == did {
			return true
		}
	}
	return false
}
