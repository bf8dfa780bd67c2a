package fsm

import "fmt"

// Code is the stable outcome of a command. Persisted in snapshots (the results of remembered
// requests): every code has an explicit number; never renumber or reuse one.
type Code uint16

const (
	OK                   Code = 0
	ErrNoSuchSession     Code = 1  // the session is gone (quit or purged)
	ErrNickInUse         Code = 2  // 433
	ErrNickOwned         Code = 3  // the nick is owned by another DID; Result.Owner names it
	ErrBadName           Code = 4  // 432 / 479: empty or too long
	ErrNoSuchChannel     Code = 5  // 403
	ErrNotOnChannel      Code = 6  // 442
	ErrUserNotInChannel  Code = 7  // 441
	ErrUserOnChannel     Code = 8  // 443
	ErrChanOpNeeded      Code = 9  // 482
	ErrBanned            Code = 10 // 474
	ErrInviteOnly        Code = 11 // 473
	ErrBadKey            Code = 12 // 475
	ErrTooManyChannels   Code = 13 // 405
	ErrListFull          Code = 14 // 478
	ErrAlreadyRegistered Code = 15 // 462
	ErrTopicTooLong      Code = 16 // FAIL TOPIC TOO_LONG
	ErrInvalid           Code = 17 // malformed command (a proposer bug or a hostile peer)
	NoChange             Code = 18 // applied, but nothing changed (already a member, mode already set)
	ErrAlreadyPinned     Code = 19 // PIN of a pinned message
	ErrNotPinned         Code = 20 // UNPIN of a message that is not pinned
	ErrKeyEnded          Code = 21 // registering a key that is retired or already expired
	ErrTooManyFounded    Code = 22 // 405: the DID founds MaxFoundedPerDID channels already
	ErrTooManyKeys       Code = 23 // MSGSIG: every one of the DID's MaxSessionKeysPerDID keys is in use
	ErrChannelFull       Code = 24 // 471: the channel has reached its +l limit
)

// codeNames is the registration table of result codes: each code's name.
var codeNames = map[Code]string{
	OK: "ok", ErrNoSuchSession: "no-such-session", ErrNickInUse: "nick-in-use", ErrNickOwned: "nick-owned",
	ErrBadName: "bad-name", ErrNoSuchChannel: "no-such-channel", ErrNotOnChannel: "not-on-channel",
	ErrUserNotInChannel: "user-not-in-channel", ErrUserOnChannel: "user-on-channel", ErrChanOpNeeded: "chanop-needed",
	ErrBanned: "banned", ErrInviteOnly: "invite-only", ErrBadKey: "bad-key", ErrTooManyChannels: "too-many-channels",
	ErrListFull: "list-full", ErrAlreadyRegistered: "already-registered", ErrTopicTooLong: "topic-too-long",
	ErrInvalid: "invalid", NoChange: "no-change", ErrAlreadyPinned: "already-pinned", ErrNotPinned: "not-pinned",
	ErrKeyEnded: "key-ended", ErrTooManyFounded: "too-many-founded", ErrTooManyKeys: "too-many-keys",
	ErrChannelFull: "channel-full",
}

func (c Code) String() string {
	if name, ok := codeNames[c]; ok {
		return name
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
	Kind       EventKind
	Index      uint64
	Time       int64 // unix ms from the proposer
	Actor      SessionRef
	Target     SessionRef // EvKick, EvInvite
	Channel    string
	Channels   []string // EvQuit, EvNick, EvAccount, EvAway: the actor's channels
	OldNick    string   // EvNick
	Text       string   // reason, topic, away message
	Modes      []ModeChange
	Member     Member         // EvJoin
	Created    bool           // EvJoin
	MsgID      string         // EvPin, EvUnpin
	MarkerAt   int64          // EvReadMarker: the marker (unix ms)
	Payload    any            // an event of a module: what the module's package says it carries
	OldChannel string         // EvRename: the channel's former name (rename.go)
	Presence   PresenceChange // EvJoin, EvPart of a peer server's user: it came into or went out of view (presence.go)
}

// nameCode names a result code of a feature file; a number taken twice is a programming error
// caught when the package loads, as registerCommands does for command types.
func nameCode(c Code, name string) {
	if old, taken := codeNames[c]; taken {
		panic(fmt.Sprintf("fsm: result code %d named twice (%s, %s)", c, old, name))
	}
	codeNames[c] = name
}
