package fsm

import (
	"encoding/json"
	"fmt"
	"slices"
)

// The snapshot encoding. State, Session, Channel and RemoteMember keep their maps unexported so
// that nothing outside this package can index or change them; these wire types carry the same
// fields, in the same order and under the same JSON names as when those fields were exported, so
// snapshots written before and after read the same and equal states still hash equal.
// TestWireTypesCoverState fails when a field is added to one side only.

// snapshotOrder is the order of a snapshot's top-level sections, those of the core and of the
// modules alike: the order the fields of the state had when it was one struct, so that equal
// states encode to the same bytes as before. A module section not named here is written before
// "requests", the unnamed ones in name order. An absent module section (nil) is left out.
var snapshotOrder = []string{
	"sessions", "nicks", "nick_owners", "did_nicks", "channels", "tokens", "favorites", "keys",
	"remote_members", "read_markers", "metadata", "coord", "media", "av", "redirects", "logins",
	"node_keys", "requests", "request_order", "index",
}

// coreSection encodes and decodes one section the core keeps itself; encode reports false for a
// section left out (empty, where the field had omitempty).
type coreSection struct {
	encode func(s *State) (any, bool)
	decode func(s *State, data []byte) error
}

func always[T any](get func(s *State) *T) coreSection {
	return coreSection{
		encode: func(s *State) (any, bool) { return *get(s), true },
		decode: func(s *State, data []byte) error { return json.Unmarshal(data, get(s)) },
	}
}

func unlessEmpty[K comparable, V any](get func(s *State) *map[K]V) coreSection {
	return coreSection{
		encode: func(s *State) (any, bool) { return *get(s), len(*get(s)) > 0 },
		decode: func(s *State, data []byte) error { return json.Unmarshal(data, get(s)) },
	}
}

func unlessNil[T any](get func(s *State) **T) coreSection {
	return coreSection{
		encode: func(s *State) (any, bool) { return *get(s), *get(s) != nil },
		decode: func(s *State, data []byte) error { return json.Unmarshal(data, get(s)) },
	}
}

var coreSections = map[string]coreSection{
	"sessions":       always(func(s *State) *map[string]*Session { return &s.sessions }),
	"nicks":          always(func(s *State) *map[string]string { return &s.nicks }),
	"nick_owners":    always(func(s *State) *map[string]string { return &s.nickOwners }),
	"did_nicks":      always(func(s *State) *map[string]string { return &s.didNicks }),
	"channels":       always(func(s *State) *map[string]*Channel { return &s.channels }),
	"tokens":         always(func(s *State) *map[string]string { return &s.tokens }),
	"favorites":      always(func(s *State) *map[string][]string { return &s.favorites }),
	"keys":           always(func(s *State) *map[string]map[string]*KeyRecord { return &s.keys }),
	"remote_members": unlessEmpty(func(s *State) *map[string]*RemoteMember { return &s.remoteMembers }),
	"read_markers":   unlessEmpty(func(s *State) *map[string]map[string]int64 { return &s.readMarkers }),
	"redirects":      unlessNil(func(s *State) **Redirects { return &s.redirects }),
	"logins":         unlessNil(func(s *State) **Logins { return &s.logins }),
	"node_keys":      unlessEmpty(func(s *State) *map[string][]byte { return &s.nodeKeys }),
	"requests":       always(func(s *State) *map[string]Result { return &s.requests }),
	"request_order":  always(func(s *State) *[]string { return &s.requestOrder }),
	"index":          always(func(s *State) *uint64 { return &s.index }),
}

// sectionNames is every section in snapshot order: snapshotOrder with the modules' sections it
// does not name inserted before "requests".
func sectionNames() []string {
	var extra []string
	for name := range modules {
		if !slices.Contains(snapshotOrder, name) {
			extra = append(extra, name)
		}
	}
	if len(extra) == 0 {
		return snapshotOrder
	}
	slices.Sort(extra)
	at := slices.Index(snapshotOrder, "requests")
	return slices.Concat(snapshotOrder[:at], extra, snapshotOrder[at:])
}

// encode renders the State in its snapshot form: one JSON object, a key per section.
func (s *State) encode() ([]byte, error) {
	b := []byte{'{'}
	for _, name := range sectionNames() {
		var v any
		if cs, ok := coreSections[name]; ok {
			var present bool
			if v, present = cs.encode(s); !present {
				continue
			}
		} else if m, ok := modules[name]; ok {
			if v = s.section(m.Section); v == nil {
				continue
			}
		} else {
			continue
		}
		data, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("section %s: %w", name, err)
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
		b = append(b, data...)
	}
	return append(b, '}'), nil
}

// decode reads the State from its snapshot form. A section no part of this build knows is
// ignored, as unknown fields always were.
func (s *State) decode(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	for name, sec := range raw {
		if cs, ok := coreSections[name]; ok {
			if err := cs.decode(s, sec); err != nil {
				return fmt.Errorf("section %s: %w", name, err)
			}
			continue
		}
		m, ok := modules[name]
		if !ok || string(sec) == "null" {
			continue
		}
		v, err := m.Section.decodeSection(sec)
		if err != nil {
			return err
		}
		m.Section.set(s, v)
	}
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
