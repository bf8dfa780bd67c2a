package irc

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// The seams other packages plug into the IRC edge with, all before the edge serves (the node
// calls each surface's constructor before it opens its listeners):
//
//   - RegisterVerb adds a command (PROVENANCE, AGENT, PRESENCE, ...).
//   - AddMessageCheck adds a check run on every PRIVMSG, NOTICE and TAGMSG to a channel before it
//     is stored or relayed; it may refuse the message with a FAIL.
//   - SendServerMessage sends a TAGMSG or NOTICE from the server to a channel's members on every
//     node, signed with this node's server key, optionally stored.
//   - AddJoinTags adds client-only tags to the JOIN lines rendered for a channel.

// ErrServing is returned by the registration methods once the edge has served a connection.
var ErrServing = errors.New("irc: the edge is already serving; register before the node serves")

// extensions holds what other packages registered. mu is a leaf lock (lock tier 9; never held
// while a registered function runs). Registration closes when the edge serves its first
// connection; JOINs rendered before then (the replayed log) may already read it.
type extensions struct {
	mu       sync.RWMutex
	serving  bool
	verbs    map[string]handler
	checks   []namedCheck
	joinTags []JoinTagFunc
}

type namedCheck struct {
	name string
	fn   MessageCheckFunc
}

var verbPattern = regexp.MustCompile(`^[A-Z][A-Z0-9]{0,31}$`)

// VerbContext is what a registered verb's function is given: who sent it, and how to answer.
// Replies go into the command's response (labeled-response and ordering apply as for the
// built-in commands). It is valid only during the call.
type VerbContext struct {
	c  *client
	rb *respBuf
	// Msg is the command as received (tags included; Command upper-cased).
	Msg ircmsg.Message
}

// SessionID is the sender's session id.
func (v *VerbContext) SessionID() string { return v.c.id }

// DID is the sender's authenticated DID, or "" for a guest.
func (v *VerbContext) DID() string { return v.c.currentDID() }

// Nick is the sender's nick.
func (v *VerbContext) Nick() string { return v.c.nick }

// Hostmask is the sender's nick!user@host.
func (v *VerbContext) Hostmask() string { return v.c.hostmask() }

// Oper reports whether the sender is a server operator.
func (v *VerbContext) Oper() bool { return v.c.oper }

// Has reports whether the sender negotiated the named capability (e.g. "message-tags").
func (v *VerbContext) Has(capName string) bool {
	b, ok := capNames[capName]
	return ok && v.c.has(b)
}

// Caps lists the capabilities the sender negotiated, sorted.
func (v *VerbContext) Caps() []string {
	var out []string
	bits := v.c.capBits()
	for name, b := range capNames {
		if bits&b != 0 {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Context ends when the edge stops; a verb that waits (a proposal, a lookup) bounds its wait
// with it.
func (v *VerbContext) Context() context.Context { return v.c.s.ctx }

// ServerName is the server's name, the source of its replies.
func (v *VerbContext) ServerName() string { return v.c.s.cfg.ServerName }

// Reply adds a line to the response; an empty Source becomes the server's name.
func (v *VerbContext) Reply(m ircmsg.Message) {
	if m.Source == "" {
		m.Source = v.c.s.cfg.ServerName
	}
	v.rb.add(m)
}

// Fail answers with a standard reply: FAIL <command> <code> [context...] :<text>.
func (v *VerbContext) Fail(command, code, text string, context ...string) {
	v.rb.add(v.c.failMsg(command, code, text, context...))
}

// Numeric answers with a numeric addressed to the sender: :<server> <code> <nick> <params...>.
func (v *VerbContext) Numeric(code string, params ...string) {
	v.rb.add(v.c.numericMsg(code, params...))
}

// VerbFunc runs a registered verb. It runs on the sender's connection goroutine, after the
// sender's earlier messages were stored; it may propose (and wait) and read the state.
type VerbFunc func(v *VerbContext)

// RegisterVerb adds a command to the edge. The verb is upper-case letters and digits (at most 32)
// and may not be a built-in command or one already registered; minParams fewer parameters are
// answered 461. Registered verbs need a registered connection and count against the command
// flood limit.
func (s *Server) RegisterVerb(verb string, minParams int, fn VerbFunc) error {
	if !verbPattern.MatchString(verb) {
		return fmt.Errorf("irc: register verb %q: not an upper-case command name", verb)
	}
	if fn == nil || minParams < 0 || minParams > 15 {
		return fmt.Errorf("irc: register verb %s: a function and 0..15 parameters are required", verb)
	}
	if _, builtin := commands[verb]; builtin {
		return fmt.Errorf("irc: register verb %s: a built-in command", verb)
	}
	s.ext.mu.Lock()
	defer s.ext.mu.Unlock()
	if s.ext.serving {
		return fmt.Errorf("register verb %s: %w", verb, ErrServing)
	}
	if _, dup := s.ext.verbs[verb]; dup {
		return fmt.Errorf("irc: register verb %s: already registered", verb)
	}
	if s.ext.verbs == nil {
		s.ext.verbs = map[string]handler{}
	}
	s.ext.verbs[verb] = handler{minParams: minParams, fn: func(c *client, m ircmsg.Message, rb *respBuf) {
		fn(&VerbContext{c: c, rb: rb, Msg: m})
	}}
	return nil
}

// lookupCommand finds a built-in or registered command.
func (s *Server) lookupCommand(verb string) (handler, bool) {
	if h, ok := commands[verb]; ok {
		return h, true
	}
	s.ext.mu.RLock()
	h, ok := s.ext.verbs[verb]
	s.ext.mu.RUnlock()
	return h, ok
}

// startServing closes registration: from the first connection on, the seams are fixed.
func (s *Server) startServing() {
	s.ext.mu.Lock()
	s.ext.serving = true
	s.ext.mu.Unlock()
}

// OutgoingMessage is a PRIVMSG, NOTICE or TAGMSG a client sends to a channel, as the message
// checks see it: after the channel's modes allowed it, before it is signed, stored or relayed.
type OutgoingMessage struct {
	SessionID string
	DID       string // "" for a guest
	Nick      string
	Hostmask  string
	Command   string            // PRIVMSG, NOTICE or TAGMSG
	Channel   string            // folded
	Status    string            // "@", "%", "+" for a status message, else ""
	Tags      map[string]string // the client-only tags it carries; never modify
	Text      string            // "" for a TAGMSG
}

// Refusal is a message check's answer when it refuses a message: the sender gets
// FAIL <command> <Code> <channel> :<Text>, and nothing is stored, relayed or delivered.
type Refusal struct {
	Code string // e.g. INVALID_ACT, NOT_ALLOWED (upper-case, no spaces)
	Text string
}

// MessageCheckFunc checks an outgoing channel message; nil lets it through. It runs on the
// sender's connection goroutine and must be quick: read the state, never propose.
type MessageCheckFunc func(m OutgoingMessage) *Refusal

// AddMessageCheck adds a check run, in the order added, on every PRIVMSG, NOTICE and TAGMSG to a
// channel. The first refusal wins.
func (s *Server) AddMessageCheck(name string, fn MessageCheckFunc) error {
	if fn == nil || name == "" {
		return fmt.Errorf("irc: add message check %q: a name and a function are required", name)
	}
	s.ext.mu.Lock()
	defer s.ext.mu.Unlock()
	if s.ext.serving {
		return fmt.Errorf("add message check %s: %w", name, ErrServing)
	}
	for _, c := range s.ext.checks {
		if c.name == name {
			return fmt.Errorf("irc: add message check %s: already added", name)
		}
	}
	s.ext.checks = append(s.ext.checks, namedCheck{name: name, fn: fn})
	return nil
}

// checkOutgoing runs the message checks: the first refusal, or nil.
func (c *client) checkOutgoing(cmd, status, channel, text string, tags map[string]string) *chat.Refusal {
	c.s.ext.mu.RLock()
	checks := c.s.ext.checks
	c.s.ext.mu.RUnlock()
	if len(checks) == 0 {
		return nil
	}
	m := OutgoingMessage{SessionID: c.id, DID: c.currentDID(), Nick: c.nick, Hostmask: c.hostmask(),
		Command: cmd, Channel: channel, Status: status, Tags: tags}
	if cmd != "TAGMSG" {
		m.Text = text
	}
	for _, chk := range checks {
		r := chk.fn(m)
		if r == nil {
			continue
		}
		code := r.Code
		if code == "" || strings.ContainsAny(code, " \r\n") {
			code = "REFUSED"
		}
		return &chat.Refusal{Command: cmd, Code: code, Text: r.Text, Context: []string{status + channel}}
	}
	return nil
}

// JoinTagFunc returns client-only tags (keys starting with "+") to add to the JOIN of session (did
// "" for a guest) to channel, rendered for the channel's local members with message-tags; nil for
// none. It runs on the render goroutine, once per JOIN: read the state, never propose.
type JoinTagFunc func(channel, session, did string) map[string]string

// AddJoinTags adds a join-tag function; the tags of all of them are merged, later ones winning.
func (s *Server) AddJoinTags(fn JoinTagFunc) error {
	if fn == nil {
		return errors.New("irc: add join tags: nil function")
	}
	s.ext.mu.Lock()
	defer s.ext.mu.Unlock()
	if s.ext.serving {
		return fmt.Errorf("add join tags: %w", ErrServing)
	}
	s.ext.joinTags = append(s.ext.joinTags, fn)
	return nil
}

// joinTags merges the join tags for a JOIN; nil when there are none. Keys that are not
// client-only, or that only the server may set on a client's message, are dropped.
func (s *Server) joinTags(channel, session, did string) map[string]string {
	s.ext.mu.RLock()
	fns := s.ext.joinTags
	s.ext.mu.RUnlock()
	var out map[string]string
	for _, fn := range fns {
		for k, v := range fn(channel, session, did) {
			if !strings.HasPrefix(k, "+") || len(k) > 128 || len(v) > 1024 {
				continue
			}
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// ServerMessage is a message the server itself sends to a channel.
type ServerMessage struct {
	Channel string            // "#name"; folded here
	Command string            // "TAGMSG" or "NOTICE"
	Text    string            // NOTICE only
	Tags    map[string]string // client-only tags ("+..."), signed with the message
	// Store keeps it in the channel's history (and sends it through the durable exchange);
	// otherwise it is relayed live only, which only a TAGMSG may be.
	Store bool
	// EventID and Signature, when set, are the id and signature this node already gave the
	// document (an act receipt filed in the state): the message carries them as its msgid and
	// +freeq.at/sig instead of new ones (chat.Service.SendAsNode checks the signature).
	EventID, Signature string
}

// Validation limits of a ServerMessage.
const (
	maxServerMessageText = 4096
	maxServerMessageTags = maxClientTagData
)

// SendServerMessage sends m from the server (source: the server name, account: this node's
// server DID) to the channel's members on every node: those with message-tags for a TAGMSG. A
// message that is a signed document (a NOTICE, an act receipt, a coordination event) is signed
// with this node's server key; a TAGMSG that carries none (+freeq.at/av-*) goes unsigned. It returns the message's msgid. A stored message is durable before
// anyone gets it; a live one is relayed best effort.
func (s *Server) SendServerMessage(ctx context.Context, m ServerMessage) (string, error) {
	name := fsm.Fold(m.Channel)
	if _, err := signing.ChannelVenue(name); err != nil || !chat.IsChannel(name) {
		return "", fmt.Errorf("irc: server message: %q is not a channel", m.Channel)
	}
	switch {
	case m.Command != "TAGMSG" && m.Command != "NOTICE":
		return "", fmt.Errorf("irc: server message: command %q: TAGMSG or NOTICE only", m.Command)
	case m.Command == "TAGMSG" && m.Text != "":
		return "", errors.New("irc: server message: a TAGMSG has no text")
	case m.Command == "NOTICE" && (m.Text == "" || len(m.Text) > maxServerMessageText || strings.ContainsAny(m.Text, "\r\n\x00")):
		return "", errors.New("irc: server message: a NOTICE needs one line of text, at most 4096 bytes")
	case m.Command == "NOTICE" && !m.Store:
		return "", errors.New("irc: server message: only a TAGMSG may be live only")
	case m.Store && s.history == nil:
		return "", errors.New("irc: server message: this edge keeps no history to store it in")
	}
	tags := make(map[string]string, len(m.Tags)+1)
	size := 0
	for k, v := range m.Tags {
		if !strings.HasPrefix(k, "+") || k == tagSig {
			return "", fmt.Errorf("irc: server message: tag %q: client-only tags only, the signature is added here", k)
		}
		size += len(k) + len(v) + 2
		tags[k] = v
	}
	if size > maxServerMessageTags {
		return "", fmt.Errorf("irc: server message: %d bytes of tags, over %d", size, maxServerMessageTags)
	}
	if m.EventID != "" {
		tags[chat.TagEventID] = m.EventID
	}
	if m.Signature != "" {
		tags[tagSig] = m.Signature
	}
	exists := false
	s.state.Read(func(st *fsm.State) { exists = st.ChannelExists(name) })
	if !exists {
		return "", fmt.Errorf("irc: server message: no channel %s", name)
	}
	w, err := s.msgs.SendAsNode(ctx, chat.Draft{Sender: chat.Sender{Nick: s.cfg.ServerName, Mask: s.cfg.ServerName},
		Command: m.Command, Venue: name, Text: m.Text, Tags: tags, Deliver: s.DeliverRemote}, m.Store)
	if err != nil {
		return "", fmt.Errorf("irc: server message: %w", err)
	}
	return w.Event.MsgID, nil
}

// RateLimited reports whether a session connected to this node has spent its message budget
// now, without spending any: chat.Request.RateLimited for a prediction. False for a session on
// another node or when flood limits are off.
func (s *Server) RateLimited(session string) bool {
	c := s.localClient(session)
	if c == nil || c.flood.messages == nil {
		return false
	}
	return c.flood.messages.TokensAt(time.Now()) < 1
}
