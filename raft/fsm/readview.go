package fsm

import (
	"iter"
	"slices"
)

// Read-only views. The read API (view.go) hands out these views, or copies, never the mutable
// records Apply changes: a view wraps a pointer into the live state and offers accessors only, so
// reading through one costs no allocation and no caller can write the state behind Raft's back.
// Like everything the read API returns, a view is good only inside the Machine.Read callback.

// KeyView is a read-only view of a public key filed under a DID.
type KeyView struct{ k *KeyRecord }

// KID is the key id.
func (v KeyView) KID() string { return v.k.KID }

// PublicKey returns a copy of the public key.
func (v KeyView) PublicKey() []byte { return slices.Clone(v.k.PublicKey) }

// Source is where the key came from ("server-key", "local-session", "origin-server", ...).
func (v KeyView) Source() string { return v.k.Source }

// Purpose is what the key is for, "" when unstated.
func (v KeyView) Purpose() string { return v.k.Purpose }

// RegisteredAt is when the key was filed (unix seconds).
func (v KeyView) RegisteredAt() int64 { return v.k.RegisteredAt }

// LastSeenAt is when the key was last registered again (unix seconds).
func (v KeyView) LastSeenAt() int64 { return v.k.LastSeenAt }

// RemovedAt is when the key was retired (unix seconds), 0 if it was not.
func (v KeyView) RemovedAt() int64 { return v.k.RemovedAt }

// ExpiresAt is when the key expires (unix seconds), 0 if it does not.
func (v KeyView) ExpiresAt() int64 { return v.k.ExpiresAt }

// EndedAt is when the key stopped counting (see KeyRecord.EndedAt).
func (v KeyView) EndedAt() int64 { return v.k.EndedAt() }

// Live reports whether the key is neither retired nor expired at unix second now.
func (v KeyView) Live(now int64) bool { return v.k.Live(now) }

// Record returns a copy of the key that the caller owns and may keep.
func (v KeyView) Record() KeyRecord {
	r := *v.k
	r.PublicKey = slices.Clone(v.k.PublicKey)
	return r
}

// ChannelView is a read-only view of a channel.
type ChannelView struct{ c *Channel }

// Name is the folded name.
func (v ChannelView) Name() string { return v.c.Name }

// CreatedAt is when the channel was created (unix ms).
func (v ChannelView) CreatedAt() int64 { return v.c.CreatedAt }

// Topic is the topic, "" when none is set.
func (v ChannelView) Topic() string { return v.c.Topic }

// TopicBy is who set the topic.
func (v ChannelView) TopicBy() string { return v.c.TopicBy }

// TopicAt is when the topic was set (unix ms).
func (v ChannelView) TopicAt() int64 { return v.c.TopicAt }

// InviteOnly is mode +i.
func (v ChannelView) InviteOnly() bool { return v.c.InviteOnly }

// TopicLock is mode +t.
func (v ChannelView) TopicLock() bool { return v.c.TopicLock }

// NoExternal is mode +n.
func (v ChannelView) NoExternal() bool { return v.c.NoExternal }

// Moderated is mode +m.
func (v ChannelView) Moderated() bool { return v.c.Moderated }

// Encrypted is mode +E.
func (v ChannelView) Encrypted() bool { return v.c.Encrypted }

// Key is the +k key, "" when none is set.
func (v ChannelView) Key() string { return v.c.Key }

// Limit is the +l member limit, 0 when none is set.
func (v ChannelView) Limit() int { return v.c.Limit }

// Secret is mode +s.
func (v ChannelView) Secret() bool { return v.c.Secret }

// NoCTCP is mode +C.
func (v ChannelView) NoCTCP() bool { return v.c.NoCTCP }

// FounderDID is the founder's DID, "" when the channel has none.
func (v ChannelView) FounderDID() string { return v.c.FounderDID }

// Incarnation names this life of the channel (see Channel.Incarnation).
func (v ChannelView) Incarnation() string { return v.c.Incarnation }

// EmptySince is when the channel was last left without members (unix ms), 0 while it has some.
func (v ChannelView) EmptySince() int64 { return v.c.EmptySince }

// Bans returns a copy of the +b list.
func (v ChannelView) Bans() []ListEntry { return slices.Clone(v.c.Bans) }

// BanExceptions returns a copy of the +e list.
func (v ChannelView) BanExceptions() []ListEntry { return slices.Clone(v.c.BanExceptions) }

// Exceptions returns a copy of the +I list.
func (v ChannelView) Exceptions() []ListEntry { return slices.Clone(v.c.Exceptions) }

// Pins returns a copy of the pinned messages, newest first.
func (v ChannelView) Pins() []PinEntry { return slices.Clone(v.c.Pins) }

// PinCount is the number of pinned messages.
func (v ChannelView) PinCount() int { return len(v.c.Pins) }

// Member returns a session's prefixes in the channel; ok is false when it is not a member.
func (v ChannelView) Member(id string) (Member, bool) { return v.c.Member(id) }

// IsMember reports whether the session is a member of the channel.
func (v ChannelView) IsMember(id string) bool { return v.c.IsMember(id) }

// MemberCount is the number of member sessions.
func (v ChannelView) MemberCount() int { return v.c.MemberCount() }

// Members iterates over the member sessions: session id and prefixes.
func (v ChannelView) Members() iter.Seq2[string, Member] { return v.c.Members() }

// MemberIDs returns the member session ids, sorted.
func (v ChannelView) MemberIDs() []string { return v.c.MemberIDs() }

// Prefixes returns the session's prefix characters in the channel (see Channel.Prefixes).
func (v ChannelView) Prefixes(id string, multi bool) string { return v.c.Prefixes(id, multi) }

// IsDIDOp reports whether did is one of the channel's DID operators.
func (v ChannelView) IsDIDOp(did string) bool { return v.c.IsDIDOp(did) }

// DIDOps returns the channel's DID operators, sorted.
func (v ChannelView) DIDOps() []string { return v.c.DIDOps() }

// ModeString is the channel's mode letters (see Channel.ModeString).
func (v ChannelView) ModeString() string { return v.c.ModeString() }

// Discoverable reports whether anonymous readers may see the channel (see Channel.Discoverable).
func (v ChannelView) Discoverable() bool { return v.c.Discoverable() }

// IsBanned reports whether a user is held by a ban (see Channel.IsBanned).
func (v ChannelView) IsBanned(hostmask, did string) bool { return v.c.IsBanned(hostmask, did) }

// IsExcepted reports whether a user matches a +I mask.
func (v ChannelView) IsExcepted(hostmask, did string) bool { return v.c.IsExcepted(hostmask, did) }

// IsBanExcepted reports whether a user matches a +e mask.
func (v ChannelView) IsBanExcepted(hostmask, did string) bool {
	return v.c.IsBanExcepted(hostmask, did)
}

// IsMuted reports whether a user is muted (see Channel.IsMuted).
func (v ChannelView) IsMuted(hostmask, did string) bool { return v.c.IsMuted(hostmask, did) }

// CanRead reports whether a reader may see the channel's members, lists and history (see
// Channel.CanRead).
func (v ChannelView) CanRead(sessionID, did string) bool { return v.c.CanRead(sessionID, did) }

// MessageVisible is the history rule (see Channel.MessageVisible); false for the zero view.
func (v ChannelView) MessageVisible(inc string, public bool) bool {
	return v.c.MessageVisible(inc, public)
}

// IsChannelOp reports whether a session may act as an operator of a channel: a channel op, the
// founder by DID, or a server operator.
func (s *State) IsChannelOp(c ChannelView, se *Session) bool { return s.isChannelOp(c.c, se) }

// MayRead reports whether a reader known only by DID ("" = anonymous) may read a channel (see
// mayRead).
func (s *State) MayRead(c ChannelView, did string) bool { return s.mayRead(c.c, did) }
