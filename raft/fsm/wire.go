package fsm

import "encoding/json"

// The snapshot encoding. State, Session, Channel and RemoteMember keep their maps unexported so
// that nothing outside this package can index or change them; these wire types carry the same
// fields, in the same order and under the same JSON names as when those fields were exported, so
// snapshots written before and after read the same and equal states still hash equal.
// TestWireTypesCoverState fails when a field is added to one side only.

type stateWire struct {
	Sessions      map[string]*Session              `json:"sessions"`
	Nicks         map[string]string                `json:"nicks"`
	NickOwners    map[string]string                `json:"nick_owners"`
	DIDNicks      map[string]string                `json:"did_nicks"`
	Channels      map[string]*Channel              `json:"channels"`
	Tokens        map[string]string                `json:"tokens"`
	Favorites     map[string][]string              `json:"favorites"`
	Keys          map[string]map[string]*KeyRecord `json:"keys"`
	RemoteMembers map[string]*RemoteMember         `json:"remote_members,omitempty"`
	ReadMarkers   map[string]map[string]int64      `json:"read_markers,omitempty"`
	Metadata      *MetadataStore                   `json:"metadata,omitempty"`
	Coord         *Coord                           `json:"coord,omitempty"`
	Media         *MediaState                      `json:"media,omitempty"`
	AV            *AVState                         `json:"av,omitempty"`
	Redirects     *Redirects                       `json:"redirects,omitempty"`
	Logins        *Logins                          `json:"logins,omitempty"`
	NodeKeys      map[string][]byte                `json:"node_keys,omitempty"`
	Requests      map[string]Result                `json:"requests"`
	RequestOrder  []string                         `json:"request_order"`
	Index         uint64                           `json:"index"`
}

// MarshalJSON encodes the State in its snapshot form.
func (s *State) MarshalJSON() ([]byte, error) {
	return json.Marshal(stateWire{
		Sessions:      s.sessions,
		Nicks:         s.nicks,
		NickOwners:    s.nickOwners,
		DIDNicks:      s.didNicks,
		Channels:      s.channels,
		Tokens:        s.tokens,
		Favorites:     s.favorites,
		Keys:          s.keys,
		RemoteMembers: s.remoteMembers,
		ReadMarkers:   s.readMarkers,
		Metadata:      s.metadata,
		Coord:         s.coord,
		Media:         s.media,
		AV:            s.av,
		Redirects:     s.redirects,
		Logins:        s.logins,
		NodeKeys:      s.nodeKeys,
		Requests:      s.requests,
		RequestOrder:  s.requestOrder,
		Index:         s.index,
	})
}

// UnmarshalJSON decodes the State from its snapshot form.
func (s *State) UnmarshalJSON(data []byte) error {
	var w stateWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	s.sessions = w.Sessions
	s.nicks = w.Nicks
	s.nickOwners = w.NickOwners
	s.didNicks = w.DIDNicks
	s.channels = w.Channels
	s.tokens = w.Tokens
	s.favorites = w.Favorites
	s.keys = w.Keys
	s.remoteMembers = w.RemoteMembers
	s.readMarkers = w.ReadMarkers
	s.metadata = w.Metadata
	s.coord = w.Coord
	s.media = w.Media
	s.av = w.AV
	s.redirects = w.Redirects
	s.logins = w.Logins
	s.nodeKeys = w.NodeKeys
	s.requests = w.Requests
	s.requestOrder = w.RequestOrder
	s.index = w.Index
	return nil
}

type sessionWire struct {
	ID          string          `json:"id"`
	Node        string          `json:"node"`
	Incarnation string          `json:"incarnation"`
	Nick        string          `json:"nick"`
	User        string          `json:"user"`
	Host        string          `json:"host"`
	Realname    string          `json:"realname"`
	DID         string          `json:"did,omitempty"`
	TokenHash   string          `json:"token_hash,omitempty"`
	Away        string          `json:"away,omitempty"`
	Oper        bool            `json:"oper,omitempty"`
	Secure      bool            `json:"secure,omitempty"`
	SigningKID  string          `json:"signing_kid,omitempty"`
	Bot         bool            `json:"bot,omitempty"`
	Invisible   bool            `json:"invisible,omitempty"`
	ConnectedAt int64           `json:"connected_at"`
	Channels    map[string]bool `json:"channels"`
}

// MarshalJSON encodes the Session in its snapshot form.
func (s *Session) MarshalJSON() ([]byte, error) {
	return json.Marshal(sessionWire{
		ID:          s.ID,
		Node:        s.Node,
		Incarnation: s.Incarnation,
		Nick:        s.Nick,
		User:        s.User,
		Host:        s.Host,
		Realname:    s.Realname,
		DID:         s.DID,
		TokenHash:   s.TokenHash,
		Away:        s.Away,
		Oper:        s.Oper,
		Secure:      s.Secure,
		SigningKID:  s.SigningKID,
		Bot:         s.Bot,
		Invisible:   s.Invisible,
		ConnectedAt: s.ConnectedAt,
		Channels:    s.channels,
	})
}

// UnmarshalJSON decodes the Session from its snapshot form.
func (s *Session) UnmarshalJSON(data []byte) error {
	var w sessionWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	s.ID = w.ID
	s.Node = w.Node
	s.Incarnation = w.Incarnation
	s.Nick = w.Nick
	s.User = w.User
	s.Host = w.Host
	s.Realname = w.Realname
	s.DID = w.DID
	s.TokenHash = w.TokenHash
	s.Away = w.Away
	s.Oper = w.Oper
	s.Secure = w.Secure
	s.SigningKID = w.SigningKID
	s.Bot = w.Bot
	s.Invisible = w.Invisible
	s.ConnectedAt = w.ConnectedAt
	s.channels = w.Channels
	return nil
}

type channelWire struct {
	Name          string             `json:"name"`
	CreatedAt     int64              `json:"created_at"`
	Topic         string             `json:"topic,omitempty"`
	TopicBy       string             `json:"topic_by,omitempty"`
	TopicAt       int64              `json:"topic_at,omitempty"`
	InviteOnly    bool               `json:"i,omitempty"`
	TopicLock     bool               `json:"t,omitempty"`
	NoExternal    bool               `json:"n,omitempty"`
	Moderated     bool               `json:"m,omitempty"`
	Encrypted     bool               `json:"E,omitempty"`
	Key           string             `json:"k,omitempty"`
	Limit         int                `json:"l,omitempty"`
	Secret        bool               `json:"s,omitempty"`
	NoCTCP        bool               `json:"C,omitempty"`
	FounderDID    string             `json:"founder_did,omitempty"`
	DIDOps        map[string]bool    `json:"did_ops,omitempty"`
	Bans          []ListEntry        `json:"bans,omitempty"`
	Exceptions    []ListEntry        `json:"exceptions,omitempty"`
	Invites       map[string]int64   `json:"invites,omitempty"`
	Members       map[string]*Member `json:"members"`
	Pins          []PinEntry         `json:"pins,omitempty"`
	Incarnation   string             `json:"incarnation,omitempty"`
	EmptySince    int64              `json:"empty_since,omitempty"`
	BanExceptions []ListEntry        `json:"ban_exceptions,omitempty"`
}

// MarshalJSON encodes the Channel in its snapshot form.
func (c *Channel) MarshalJSON() ([]byte, error) {
	return json.Marshal(channelWire{
		Name:          c.Name,
		CreatedAt:     c.CreatedAt,
		Topic:         c.Topic,
		TopicBy:       c.TopicBy,
		TopicAt:       c.TopicAt,
		InviteOnly:    c.InviteOnly,
		TopicLock:     c.TopicLock,
		NoExternal:    c.NoExternal,
		Moderated:     c.Moderated,
		Encrypted:     c.Encrypted,
		Key:           c.Key,
		Limit:         c.Limit,
		Secret:        c.Secret,
		NoCTCP:        c.NoCTCP,
		FounderDID:    c.FounderDID,
		DIDOps:        c.didOps,
		Bans:          c.Bans,
		Exceptions:    c.Exceptions,
		Invites:       c.invites,
		Members:       c.members,
		Pins:          c.Pins,
		Incarnation:   c.Incarnation,
		EmptySince:    c.EmptySince,
		BanExceptions: c.BanExceptions,
	})
}

// UnmarshalJSON decodes the Channel from its snapshot form.
func (c *Channel) UnmarshalJSON(data []byte) error {
	var w channelWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	c.Name = w.Name
	c.CreatedAt = w.CreatedAt
	c.Topic = w.Topic
	c.TopicBy = w.TopicBy
	c.TopicAt = w.TopicAt
	c.InviteOnly = w.InviteOnly
	c.TopicLock = w.TopicLock
	c.NoExternal = w.NoExternal
	c.Moderated = w.Moderated
	c.Encrypted = w.Encrypted
	c.Key = w.Key
	c.Limit = w.Limit
	c.Secret = w.Secret
	c.NoCTCP = w.NoCTCP
	c.FounderDID = w.FounderDID
	c.didOps = w.DIDOps
	c.Bans = w.Bans
	c.Exceptions = w.Exceptions
	c.invites = w.Invites
	c.members = w.Members
	c.Pins = w.Pins
	c.Incarnation = w.Incarnation
	c.EmptySince = w.EmptySince
	c.BanExceptions = w.BanExceptions
	return nil
}

type remoteMemberWire struct {
	Peer     string          `json:"peer"`
	Nick     string          `json:"nick"`
	User     string          `json:"user"`
	Host     string          `json:"host"`
	DID      string          `json:"did,omitempty"`
	Channels map[string]bool `json:"channels,omitempty"`
}

// MarshalJSON encodes the RemoteMember in its snapshot form.
func (r *RemoteMember) MarshalJSON() ([]byte, error) {
	return json.Marshal(remoteMemberWire{
		Peer:     r.Peer,
		Nick:     r.Nick,
		User:     r.User,
		Host:     r.Host,
		DID:      r.DID,
		Channels: r.channels,
	})
}

// UnmarshalJSON decodes the RemoteMember from its snapshot form.
func (r *RemoteMember) UnmarshalJSON(data []byte) error {
	var w remoteMemberWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	r.Peer = w.Peer
	r.Nick = w.Nick
	r.User = w.User
	r.Host = w.Host
	r.DID = w.DID
	r.channels = w.Channels
	return nil
}
