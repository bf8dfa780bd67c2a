package fsm

import "slices"

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
