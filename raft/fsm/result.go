package fsm

// Code is the stable outcome of a command. Persisted in snapshots: never reorder.
type Code uint16

const (
	OK                   Code = iota
	ErrNoSuchSession          // the session is gone (quit or purged)
	ErrNickInUse              // 433
	ErrNickOwned              // the nick is owned by another DID; Result.Owner names it
	ErrBadName                // 432 / 479: empty or too long
	ErrNoSuchChannel          // 403
	ErrNotOnChannel           // 442
	ErrUserNotInChannel       // 441
	ErrUserOnChannel          // 443
	ErrChanOpNeeded           // 482
	ErrBanned                 // 474
	ErrInviteOnly             // 473
	ErrBadKey                 // 475
	ErrTooManyChannels        // 405
	ErrListFull               // 478
	ErrAlreadyRegistered      // 462
	ErrTopicTooLong           // FAIL TOPIC TOO_LONG
	ErrInvalid                // malformed command (a proposer bug or a hostile peer)
	NoChange                  // applied, but nothing changed (already a member, mode already set)
	ErrAlreadyPinned          // PIN of a pinned message
	ErrNotPinned              // UNPIN of a message that is not pinned
	ErrKeyEnded               // registering a key that is retired or already expired
	ErrChannelFull            // 471: the channel has reached its +l limit
)

var codeNames = [...]string{
	"ok", "no-such-session", "nick-in-use", "nick-owned", "bad-name", "no-such-channel",
	"not-on-channel", "user-not-in-channel", "user-on-channel", "chanop-needed", "banned",
	"invite-only", "bad-key", "too-many-channels", "list-full", "already-registered",
	"topic-too-long", "invalid", "no-change", "already-pinned", "not-pinned", "key-ended", "channel-full",
}

func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "code-unknown"
}

// Result is what Apply returns for one command.
type Result struct {
	Code    Code          `json:"code"`
	Owner   string        `json:"owner,omitempty"`   // ErrNickOwned: the owning DID
	Member  *Member       `json:"member,omitempty"`  // Join: the prefixes granted
	Created bool          `json:"created,omitempty"` // Join: the channel was created
	Applied []ModeChange  `json:"applied,omitempty"` // Mode: what changed
	Failed  []ModeFailure `json:"failed,omitempty"`  // Mode: what was refused
	Count   int           `json:"count,omitempty"`   // PurgeNode: sessions ended
	List    []string      `json:"list,omitempty"`    // SetFavorites: the stored list
}

// EventKind says what an Event reports. Not persisted.
type EventKind uint8

const (
	EvNick EventKind = iota + 1
	EvAccount
	EvQuit
	EvJoin
	EvPart
	EvKick
	EvTopic
	EvMode
	EvInvite
	EvAway
	EvOper
	EvPin
	EvUnpin
	EvReadMarker // a DID's read marker moved (readmarkers.go)
	EvSetname    // a session's real name changed (realname.go)
)

// Event is a change that gateways render for their local sessions.
type Event struct {
	Kind     EventKind
	Index    uint64
	Time     int64 // unix ms from the proposer
	Actor    SessionRef
	Target   SessionRef // EvKick, EvInvite
	Channel  string
	Channels []string // EvQuit, EvNick, EvAccount, EvAway: the actor's channels
	OldNick  string   // EvNick
	Text     string   // reason, topic, away message
	Modes    []ModeChange
	Member   Member // EvJoin
	Created  bool   // EvJoin
	MsgID    string // EvPin, EvUnpin
	MarkerAt int64  // EvReadMarker: the marker (unix ms)
}
