package fsm

import (
	"encoding/json"
	"errors"
	"fmt"
)

// CommandType is the first byte of every log entry. Persisted: never renumber, never reuse. Each
// type is registered in the commands table below.
type CommandType uint8

const (
	TypeRegisterSession CommandType = 1
	TypeChangeNick      CommandType = 2
	TypeAuthenticate    CommandType = 3
	TypeEndSession      CommandType = 4
	TypeJoin            CommandType = 5
	TypePart            CommandType = 6
	TypeKick            CommandType = 7
	TypeTopic           CommandType = 8
	TypeMode            CommandType = 9
	TypeInvite          CommandType = 10
	TypeAway            CommandType = 11
	TypeOper            CommandType = 12
	TypePurgeNode       CommandType = 13
	TypeSetFavorites    CommandType = 14
	TypePin             CommandType = 15
	TypeUnpin           CommandType = 16
	TypeRegisterKey     CommandType = 17
	TypeRetireKey       CommandType = 18
	TypeFederatedTopic  CommandType = 19
	TypeFederatedMode   CommandType = 20
	TypeFederatedPin    CommandType = 21
	TypeRemotePresence  CommandType = 22
	TypeFederatedKick   CommandType = 23
	TypeFederatedInvite CommandType = 24
)

// flagIgnorable marks a command an older node may skip when it does not know the type (rolling
// upgrades); every type defined above is mandatory.
const flagIgnorable = 0x01

// Envelope carries what the proposer stamps on every command.
type Envelope struct {
	RequestID string          `json:"rid"`
	Node      string          `json:"node"`
	Time      int64           `json:"ts"` // unix ms, stamped by the proposer
	Body      json.RawMessage `json:"body"`
}

// Command is any command body.
type Command interface{ CommandType() CommandType }

// RegisterSession makes a connected client a registered session holding a nick.
type RegisterSession struct {
	ID          string `json:"id"`
	Node        string `json:"node"`
	Incarnation string `json:"incarnation"`
	Nick        string `json:"nick"`
	User        string `json:"user"`
	Host        string `json:"host"`
	Realname    string `json:"realname"`
	DID         string `json:"did,omitempty"`
	TokenHash   string `json:"token_hash,omitempty"`
	Oper        bool   `json:"oper,omitempty"`
	Secure      bool   `json:"secure,omitempty"`
}

// ChangeNick changes a registered session's nick.
type ChangeNick struct {
	Session string `json:"session"`
	Nick    string `json:"nick"`
}

// Authenticate binds a DID (and a new bearer token hash) to a registered session after SASL.
type Authenticate struct {
	Session   string `json:"session"`
	DID       string `json:"did"`
	TokenHash string `json:"token_hash"`
	Host      string `json:"host"`
	Oper      bool   `json:"oper,omitempty"`
}

// EndSession removes a session: QUIT, disconnect, or a kill by the server.
type EndSession struct {
	Session string `json:"session"`
	Reason  string `json:"reason"`
}

// Join adds a session to a channel, creating it when needed.
type Join struct {
	Session string `json:"session"`
	Channel string `json:"channel"`
	Key     string `json:"key,omitempty"`
}

// Part removes a session from a channel.
type Part struct {
	Session string `json:"session"`
	Channel string `json:"channel"`
	Reason  string `json:"reason,omitempty"`
}

// Kick removes another session from a channel.
type Kick struct {
	Session string `json:"session"`
	Channel string `json:"channel"`
	Target  string `json:"target"` // session id
	Reason  string `json:"reason,omitempty"`
}

// Topic sets a channel's topic.
type Topic struct {
	Session string `json:"session"`
	Channel string `json:"channel"`
	Text    string `json:"text"`
}

// ModeChange is one parsed channel mode change. For o, h and v Target is the session id and Arg
// its nick; for b, e and I Arg is the mask; for +k Arg is the key.
type ModeChange struct {
	Add    bool   `json:"add"`
	Mode   string `json:"mode"`
	Arg    string `json:"arg,omitempty"`
	Target string `json:"target,omitempty"`
}

// ModeFailure is a change Apply refused, with the reason.
type ModeFailure struct {
	Change ModeChange `json:"change"`
	Code   Code       `json:"code"`
}

// Mode changes channel modes.
type Mode struct {
	Session string       `json:"session"`
	Channel string       `json:"channel"`
	Changes []ModeChange `json:"changes"`
}

// Invite invites a session to a channel.
type Invite struct {
	Session string `json:"session"`
	Channel string `json:"channel"`
	Target  string `json:"target"` // session id
}

// Away sets (non-empty Text) or clears a session's away message.
type Away struct {
	Session string `json:"session"`
	Text    string `json:"text,omitempty"`
}

// Oper makes a session a server operator (after OPER or for a configured DID).
type Oper struct {
	Session string `json:"session"`
}

// PurgeNode ends every session of Node whose incarnation is not Keep: a restarted node clears the
// sessions of its previous process; the leader clears a node that left (Keep empty).
type PurgeNode struct {
	Node   string `json:"node"`
	Keep   string `json:"keep,omitempty"`
	Reason string `json:"reason"`
}

// Pin pins a message (by root msgid) in a channel; Unpin removes it. Channel operators only.
type Pin struct {
	Session string `json:"session"`
	Channel string `json:"channel"`
	MsgID   string `json:"msgid"`
}

// Unpin removes a pin.
type Unpin struct {
	Session string `json:"session"`
	Channel string `json:"channel"`
	MsgID   string `json:"msgid"`
}

// RegisterKey files a public signing key under a DID (MSGSIG, a node's server key, a key read
// from a DID document). The first registration sets registered_at; a later one only advances
// last_seen_at. Only public keys are ever replicated.
type RegisterKey struct {
	DID       string `json:"did"`
	KID       string `json:"kid"`
	PublicKey []byte `json:"public_key"` // 32-byte ed25519
	Source    string `json:"source"`     // local-session, origin-server, did-document, identity-record, server-key
	Purpose   string `json:"purpose,omitempty"`
	ExpiresAt int64  `json:"expires_at,omitempty"` // unix seconds; 0 = never
	Session   string `json:"session,omitempty"`    // MSGSIG: the session that now signs with this key
}

// RetireKey marks a key as retired by its owner; sessions signing with it are ended by the
// proposer.
type RetireKey struct {
	DID string `json:"did"`
	KID string `json:"kid"`
}

// SetFavorites replaces a DID's favourite channel list.
type SetFavorites struct {
	DID       string   `json:"did"`
	Favorites []string `json:"favorites"`
}

func (RegisterSession) CommandType() CommandType { return TypeRegisterSession }
func (ChangeNick) CommandType() CommandType      { return TypeChangeNick }
func (Authenticate) CommandType() CommandType    { return TypeAuthenticate }
func (EndSession) CommandType() CommandType      { return TypeEndSession }
func (Join) CommandType() CommandType            { return TypeJoin }
func (Part) CommandType() CommandType            { return TypePart }
func (Kick) CommandType() CommandType            { return TypeKick }
func (Topic) CommandType() CommandType           { return TypeTopic }
func (Mode) CommandType() CommandType            { return TypeMode }
func (Invite) CommandType() CommandType          { return TypeInvite }
func (Away) CommandType() CommandType            { return TypeAway }
func (Oper) CommandType() CommandType            { return TypeOper }
func (PurgeNode) CommandType() CommandType       { return TypePurgeNode }
func (SetFavorites) CommandType() CommandType    { return TypeSetFavorites }
func (Pin) CommandType() CommandType             { return TypePin }
func (Unpin) CommandType() CommandType           { return TypeUnpin }
func (RegisterKey) CommandType() CommandType     { return TypeRegisterKey }
func (RetireKey) CommandType() CommandType       { return TypeRetireKey }

// Encode renders a command as a log entry: type byte, flags byte, JSON envelope.
func Encode(cmd Command, requestID, node string, timeMS int64) ([]byte, error) {
	body, err := json.Marshal(cmd)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", cmd, err)
	}
	env, err := json.Marshal(Envelope{RequestID: requestID, Node: node, Time: timeMS, Body: body})
	if err != nil {
		return nil, fmt.Errorf("encode envelope: %w", err)
	}
	out := make([]byte, 0, 2+len(env))
	out = append(out, byte(cmd.CommandType()), 0)
	return append(out, env...), nil
}

// ErrUnknownCommand is returned by Decode for a type this build does not know.
var ErrUnknownCommand = errors.New("unknown command type")

// Decode parses a log entry. For an unknown type it returns ErrUnknownCommand and reports whether
// the entry was marked ignorable.
func Decode(data []byte) (cmd Command, env Envelope, ignorable bool, err error) {
	if len(data) < 2 {
		return nil, env, false, fmt.Errorf("decode: entry of %d bytes", len(data))
	}
	typ, flags := CommandType(data[0]), data[1]
	if err := json.Unmarshal(data[2:], &env); err != nil {
		return nil, env, false, fmt.Errorf("decode envelope: %w", err)
	}
	spec, ok := commands[typ]
	if !ok {
		return nil, env, flags&flagIgnorable != 0, fmt.Errorf("%w %d", ErrUnknownCommand, typ)
	}
	if cmd, err = spec.decode(env.Body); err != nil {
		return nil, env, false, fmt.Errorf("decode command %d (%s): %w", typ, spec.name, err)
	}
	return cmd, env, false, nil
}

// spec builds the registration of command type C, applied by f.
func spec[C Command](name string, f func(*Applier, C) Result) CommandSpec {
	return CommandSpec{
		name: name,
		decode: func(body []byte) (Command, error) {
			var c C
			if err := json.Unmarshal(body, &c); err != nil {
				return nil, err
			}
			return c, nil
		},
		apply: func(a *Applier, cmd Command) Result { return f(a, cmd.(C)) },
	}
}

// commands is the registration table: every command type this build knows, by its persisted
// number (the Type constants). Never renumber or reuse a number. A command defined in another
// file may register itself from that file's init with registerCommands.
var commands = map[CommandType]CommandSpec{
	TypeRegisterSession: spec("register-session", (*Applier).registerSession),
	TypeChangeNick:      spec("change-nick", (*Applier).changeNick),
	TypeAuthenticate:    spec("authenticate", (*Applier).authenticate),
	TypeEndSession:      spec("end-session", func(a *Applier, c EndSession) Result { return a.endSession(c.Session, c.Reason) }),
	TypeJoin:            spec("join", (*Applier).join),
	TypePart:            spec("part", (*Applier).part),
	TypeKick:            spec("kick", (*Applier).kick),
	TypeTopic:           spec("topic", (*Applier).topic),
	TypeMode:            spec("mode", (*Applier).mode),
	TypeInvite:          spec("invite", (*Applier).invite),
	TypeAway:            spec("away", (*Applier).away),
	TypeOper:            spec("oper", (*Applier).oper),
	TypePurgeNode:       spec("purge-node", (*Applier).purgeNode),
	TypeSetFavorites:    spec("set-favorites", (*Applier).setFavorites),
	TypePin:             spec("pin", (*Applier).pin),
	TypeUnpin:           spec("unpin", (*Applier).unpin),
	TypeRegisterKey:     spec("register-key", (*Applier).registerKey),
	TypeRetireKey:       spec("retire-key", (*Applier).retireKey),
	TypeFederatedTopic:  spec("federated-topic", (*Applier).federatedTopic),
	TypeFederatedMode:   spec("federated-mode", (*Applier).federatedMode),
	TypeFederatedPin:    spec("federated-pin", (*Applier).federatedPin),
	TypeRemotePresence:  spec("remote-presence", (*Applier).remotePresence),
	TypeFederatedKick:   spec("federated-kick", (*Applier).federatedKick),
	TypeFederatedInvite: spec("federated-invite", (*Applier).federatedInvite),
}

// registerCommands adds command types to the table; call it from an init function. A number that
// is already registered is a programming error and panics.
func registerCommands(specs map[CommandType]CommandSpec) {
	for typ, sp := range specs {
		if old, taken := commands[typ]; taken {
			panic(fmt.Sprintf("fsm: command type %d registered twice (%s, %s)", typ, old.name, sp.name))
		}
		commands[typ] = sp
	}
}
