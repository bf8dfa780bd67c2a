package peering

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/palaver-chat/palaver/node/limits"
	"github.com/palaver-chat/palaver/node/signing"
)

// Limits on what one envelope may carry. MaxEnvelopeBytes is read only after the sender
// authenticated (EnvelopeHeader), within the HTTP server's ReadTimeout. It holds the largest
// batch an outbox composes with room to spare (node/limits): its state changes, topics and presence
// (chat items travel by the stream, servers.go in federation/exchange), or a members snapshot of 12 linked channels of
// 1,000 members (about 2.4 MiB).
const (
	MaxEnvelopeBytes = limits.EnvelopeBytes
	MaxBatchItems    = limits.EnvelopeItems // also the per-second rate a peer may send at
	maxClockSkew     = 5 * time.Minute
)

// Envelope is the signed unit of federation traffic.
type Envelope struct {
	Signer    string `json:"signer"`    // the sending server's DID
	Payload   string `json:"payload"`   // base64url-nopad JSON of a Batch
	Signature string `json:"signature"` // ed25519:<kid>:<sig over the decoded payload bytes>
}

// Batch is what an envelope carries from one node of a server to a peer server: authority only
// (topics, other state changes, requests and their answers, presence). Messages, edits, deletes
// and reactions travel on the exchange's stream; an envelope naming them is malformed.
type Batch struct {
	From     string     `json:"from"`    // the sending server's DID; equals the envelope signer
	To       string     `json:"to"`      // the receiving server's DID
	Seq      int64      `json:"seq"`     // strictly increasing per signing key
	SentAt   int64      `json:"sent_at"` // unix seconds
	Topics   []Topic    `json:"topics,omitempty"`
	Changes  []Change   `json:"changes,omitempty"`
	Presence []Presence `json:"presence,omitempty"`
	// WantPresence asks the receiver to send its members of the linked channels again (the
	// sender forgot them when its link dropped).
	WantPresence bool `json:"want_presence,omitempty"`
}

// Items counts what a batch carries, for the rate limit.
func (b Batch) Items() int {
	return len(b.Topics) + len(b.Changes) + len(b.Presence)
}

// Topic is a topic change of a linked channel. From the home it is the channel's topic; from the
// other side it is a request the home decides on.
type Topic struct {
	Channel  string `json:"channel"`
	Text     string `json:"text"`
	SetBy    string `json:"set_by"` // nick
	SetByDID string `json:"set_by_did,omitempty"`
	AtMS     int64  `json:"at_ms"`
	// RequestID and RequestSig tie a request from the non-home side to the home's answer: the
	// requesting node signs them (see topicrequest.go) and the home echoes both back unchanged.
	RequestID  string `json:"request_id,omitempty"`
	RequestSig string `json:"request_sig,omitempty"`
}

// Change is a channel state change other than the topic: modes (flags, bans, invite exceptions),
// pins and unpins, kicks and invites. From the home it is the channel's state; from the other side it is a
// request the home decides on (RequestID and RequestSig as for Topic). Sync marks the home's
// snapshot sent when a link comes up: it only ever adds.
type Change struct {
	Kind       string       `json:"kind"` // ChangeMode, ChangePin or ChangeUnpin
	Channel    string       `json:"channel"`
	Actor      string       `json:"actor"` // nick!user@host
	ActorDID   string       `json:"actor_did,omitempty"`
	Modes      []ModeChange `json:"modes,omitempty"`
	MsgID      string       `json:"msgid,omitempty"`  // pin, unpin: the root
	Target     string       `json:"target,omitempty"` // kick, invite: the nick of a user of the receiver
	TargetDID  string       `json:"target_did,omitempty"`
	Reason     string       `json:"reason,omitempty"` // kick
	Sync       bool         `json:"sync,omitempty"`
	AtMS       int64        `json:"at_ms"`
	RequestID  string       `json:"request_id,omitempty"`
	RequestSig string       `json:"request_sig,omitempty"`
}

// Change kinds. A kick or invite names a user of the receiving server and goes to that server
// whichever side is the home: the target's server applies it when the actor is an operator there.
const (
	ChangeMode   = "mode"
	ChangePin    = "pin"
	ChangeUnpin  = "unpin"
	ChangeKick   = "kick"
	ChangeInvite = "invite"
)

// ModeChange is one channel mode: a flag (i, t, n, m) or a list entry (b, I: Arg is the mask).
// Ops, keys (+k), +E and nick-bound prefixes do not cross (see changes.go).
type ModeChange struct {
	Add  bool   `json:"add"`
	Mode string `json:"mode"`
	Arg  string `json:"arg,omitempty"`
}

// Presence is a change in the sending server's members of linked channels: a join or part of
// Channel, a quit or nick change (every linked channel), or, kind "members", the sender's whole
// membership of Channel.
type Presence struct {
	Kind    string           `json:"kind"` // PresenceJoin, PresencePart, PresenceQuit, PresenceNick, PresenceMembers
	Channel string           `json:"channel,omitempty"`
	Nick    string           `json:"nick,omitempty"`
	User    string           `json:"user,omitempty"`
	DID     string           `json:"did,omitempty"`
	NewNick string           `json:"new_nick,omitempty"`
	Reason  string           `json:"reason,omitempty"`
	Members []PresenceMember `json:"members,omitempty"`
}

// PresenceMember is one member in a members snapshot.
type PresenceMember struct {
	Nick string `json:"nick"`
	User string `json:"user,omitempty"`
	DID  string `json:"did,omitempty"`
}

// Presence kinds.
const (
	PresenceJoin    = "join"
	PresencePart    = "part"
	PresenceQuit    = "quit"
	PresenceNick    = "nick"
	PresenceMembers = "members"
)

// Ack is the answer to an accepted envelope.
type Ack struct {
	OK bool `json:"ok"`
	// Refused names the requests (by request id) the home refused, with the reason.
	Refused map[string]string `json:"refused,omitempty"`
}

// Refusal is the answer to a refused envelope: the Error object of the HTTP API (error is the
// reason phrase, status the code, message the prose, documentation the contract's address) with
// the federation's code, and the last accepted sequence for code out-of-order. A sender reads
// code and last_seq.
type Refusal struct {
	Error         string `json:"error"`
	Status        int    `json:"status"`
	Message       string `json:"message"`
	Documentation string `json:"documentation,omitempty"`
	Code          string `json:"code"`
	LastSeq       int64  `json:"last_seq,omitempty"`
}

// Refusal codes.
const (
	CodeMalformed   = "malformed"
	CodeUnknownPeer = "unknown-peer"
	CodeBadKey      = "unknown-key"
	CodeBadSig      = "bad-signature"
	CodeWrongRoute  = "wrong-route"
	CodeStale       = "stale"
	CodeOutOfOrder  = "out-of-order"
	CodeRateLimited = "rate-limited"
	CodeNotAllowed  = "not-allowed"
	CodeUnavailable = "unavailable"
)

// Seal signs a batch with a node's server key.
func Seal(priv ed25519.PrivateKey, b Batch) ([]byte, error) {
	payload, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("peering: encode batch: %w", err)
	}
	env := Envelope{Signer: b.From, Payload: base64.RawURLEncoding.EncodeToString(payload), Signature: signing.Sign(priv, batchSigningInput(payload))}
	out, err := json.Marshal(env)
	if err != nil {
		return nil, fmt.Errorf("peering: encode envelope: %w", err)
	}
	return out, nil
}

// ErrMalformed is a body that is not an envelope.
var ErrMalformed = errors.New("malformed envelope")

// ParseEnvelope reads an envelope's outer form: a signer DID, a decodable payload and a parseable
// ed25519 signature tag. It returns the payload bytes and the tag. Nothing is verified yet.
func ParseEnvelope(data []byte) (Envelope, []byte, signing.SigTag, error) {
	var env Envelope
	if len(data) > MaxEnvelopeBytes {
		return env, nil, signing.SigTag{}, fmt.Errorf("%w: larger than %d bytes", ErrMalformed, MaxEnvelopeBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		return env, nil, signing.SigTag{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if dec.More() {
		return env, nil, signing.SigTag{}, fmt.Errorf("%w: trailing data", ErrMalformed)
	}
	if env.Signer == "" || env.Payload == "" || env.Signature == "" {
		return env, nil, signing.SigTag{}, fmt.Errorf("%w: signer, payload and signature are required", ErrMalformed)
	}
	payload, err := base64.RawURLEncoding.DecodeString(env.Payload)
	if err != nil {
		return env, nil, signing.SigTag{}, fmt.Errorf("%w: payload is not base64url: %v", ErrMalformed, err)
	}
	tag, err := signing.ParseSigTag(env.Signature)
	if err != nil {
		return env, nil, signing.SigTag{}, fmt.Errorf("%w: signature: %v", ErrMalformed, err)
	}
	return env, payload, tag, nil
}

// DecodeBatch reads a verified payload.
func DecodeBatch(payload []byte) (Batch, error) {
	var b Batch
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return b, fmt.Errorf("%w: batch: %v", ErrMalformed, err)
	}
	if dec.More() {
		return b, fmt.Errorf("%w: batch: trailing data", ErrMalformed)
	}
	if b.Seq <= 0 || b.SentAt <= 0 {
		return b, fmt.Errorf("%w: batch needs a positive seq and sent_at", ErrMalformed)
	}
	if b.Items() > MaxBatchItems {
		return b, fmt.Errorf("%w: more than %d items", ErrMalformed, MaxBatchItems)
	}
	return b, nil
}
