package chat

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/node/stream"
)

// Store is the event store as the service writes it.
type Store interface {
	Roots
	Append(ctx context.Context, msgs ...*eventstore.Message) error
	Delete(ctx context.Context, rootMsgID string, at time.Time) error
	DeleteAt(ctx context.Context, rootMsgID string, at time.Time, origin string, by eventstore.Deleter) error
	FileReaction(ctx context.Context, r eventstore.ReactionEvent) (applied bool, err error)
}

// Publisher is the node's Stored stream as the service publishes into it.
type Publisher interface {
	Publish(it stream.Item)
}

// Config wires a Service.
type Config struct {
	// State is the local replica: the send rules, channel operators and registered keys.
	State State
	// Store is the node's durable event store; nil keeps nothing (messages are then neither
	// stored nor published, and edits, deletes and reactions find no message).
	Store Store
	// Key is this node's server key: it signs what a sender did not sign. Nil signs nothing.
	Key ed25519.PrivateKey
	// Stored receives every event once it is durable (relayed ones once relayed). Nil: none.
	Stored Publisher
	// NodeName is this node's name: the Origin of what is made here.
	NodeName string
	// Timeout bounds each store call; default 10 s.
	Timeout time.Duration
	Logger  *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// PersistTags are the client tags that make a TAGMSG kept in history (ergo's
	// tagmsg-storage whitelist; the node's --tagmsg-persist): a TAGMSG to a channel or a DM venue
	// carrying one of them, and neither a delete nor a reaction, is stored, published and
	// exchanged like a message. Empty: every TAGMSG is relayed live only.
	PersistTags []string
	// PersistReady, when set, reports whether every node of the cluster tells kept TAGMSGs from
	// messages (a node of an earlier version would store one as a message and serve it to every
	// reader): while it answers false, a TAGMSG is relayed live only. Nil: always.
	PersistReady func() bool
}

// DefaultPersistTags are Config.PersistTags' usual value, as ergo ships them.
var DefaultPersistTags = []string{"+draft/persist", "+persist"}

// Service is the one path by which chat events are written: its Prepare and Commit (and Send,
// Edit, Delete and React built on them) take a local sender's event, and AcceptRemote takes
// events made on another node of the cluster or on a federated server.
type Service struct {
	cfg Config
	log *slog.Logger
	// lock tier 9 (leaf)
	idMu    sync.Mutex
	entropy *ulid.MonotonicEntropy
	dl      deliveries
}

// New builds a Service.
func New(cfg Config) *Service {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Service{cfg: cfg, log: cfg.Logger, entropy: ulid.Monotonic(rand.Reader, 0)}
	if sy, ok := cfg.Stored.(interface{ Sync(context.Context) error }); ok {
		s.dl.sync = sy.Sync
	}
	if st, ok := cfg.Store.(interface {
		MaxSeq(context.Context) (int64, error)
	}); ok {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
		known, err := st.MaxSeq(ctx)
		cancel()
		if err != nil {
			s.log.Warn("chat: the greatest stored seq is unknown; readers resuming after the first messages may read older ones again", "err", err)
		}
		s.dl.known = known
	}
	return s
}

// NewMsgID mints a msgid: a ULID of the given time, monotonic on this node.
func (s *Service) NewMsgID(at time.Time) string {
	s.idMu.Lock()
	defer s.idMu.Unlock()
	return ulid.MustNew(ulid.Timestamp(at), s.entropy).String()
}

// keeps reports whether a TAGMSG's tags keep it in history (Config.PersistTags).
func (s *Service) keeps(tags map[string]string) bool {
	for _, k := range s.cfg.PersistTags {
		if _, ok := tags[k]; ok {
			return s.cfg.PersistReady == nil || s.cfg.PersistReady()
		}
	}
	return false
}

// NodeName is the name of the node the service writes for.
func (s *Service) NodeName() string { return s.cfg.NodeName }

// Stores reports whether the service keeps messages (it has an event store).
func (s *Service) Stores() bool { return s.cfg.Store != nil }

// DeletionEventIDTag is the key under which a filed delete keeps its delete event's msgid (it is
// not a client tag: it is never rendered as one).
const DeletionEventIDTag = "msgid"

// Sender is who writes an event on this node.
type Sender struct {
	Session string // session id ("" for the node itself)
	Nick    string
	Mask    string // nick!user@host
	DID     string // "" for a guest
	Oper    bool   // a server operator on its connection
	// SessionKey and SessionKID are the key the sender registered for its connection (MSGSIG),
	// looked up first when its signature names that kid; nil when none.
	SessionKey ed25519.PublicKey
	SessionKID string
}

// Draft is an event a local sender asks to write.
type Draft struct {
	Sender
	Command string // PRIVMSG, NOTICE or TAGMSG
	// Venue is a channel (folded), a DM venue (DMVenue: two DIDs, or a DID and a guest's name
	// for its connection, which is stored but not signed), or "" for a direct message between
	// two guests, which is delivered only: neither stored, signed nor published.
	Venue string
	// Status limits a channel message to the members with that prefix or a higher one ("@",
	// "%", "+"): relayed live, never stored.
	Status string
	Text   string
	// Tags are the client-only tags it carries: +freeq.at/eventid chooses the msgid,
	// +freeq.at/sig signs it, +draft/edit, +draft/delete (or +delete) and +react, +draft/react,
	// +freeq.at/unreact with +reply make it an edit, delete or reaction. Prepare copies them.
	Tags map[string]string
	// Check, when set, runs after the channel's rules and before anything else: a surface's own
	// checks of the message (nil: allowed).
	Check func() *Refusal
	// Deliver, when set, delivers what SendAsNode wrote to this node's readers (Write.Deliver).
	Deliver func(m eventstore.Message)
}

// WriteKind says what becomes of a prepared write.
type WriteKind int

const (
	// Deliver only: a direct message between two guests, or a TAGMSG to a user that is not kept.
	// Neither stored nor published.
	Deliver WriteKind = iota
	// Message: a message or an edit, or a TAGMSG kept in history (Config.PersistTags), stored,
	// then published.
	Message
	// Deletion: a delete of a stored message, applied and filed, then published.
	Deletion
	// Reaction: a react or unreact, filed and applied, then published.
	Reaction
	// Relay: a channel TAGMSG that is none of the above (typing, or one no persist tag keeps) or
	// a status message: published to be relayed live, never stored.
	Relay
)

// Write is a prepared event: checked, with its msgid, references resolved and its signature
// settled. Commit stores and publishes it. Event is the event as it is delivered (msgid, time,
// sender, text and tags, the signature among them).
type Write struct {
	Kind     WriteKind
	Event    eventstore.Message
	Deletion *eventstore.Deletion      // Kind Deletion
	Reaction *eventstore.ReactionEvent // Kind Reaction
	// Moderator says the sender is an operator or half-operator of the channel.
	Moderator bool
	// Deliver, when set, delivers the write to this node's readers: Commit runs it after the
	// durable commit (never for a write it refused), the writes' in their order, and then counts
	// their messages as delivered (see delivery.go). A stored message without it counts as
	// delivered when Commit returns; its caller delivers it then.
	Deliver func()
	// AfterDeliver, when set, runs once every written write's Deliver has run, before the
	// messages count as delivered, for each written write that has it, in their order: a caller
	// whose Deliver only gathers (one fan-out for several messages) sends what it gathered here.
	// Writes may share one; it must then do nothing when there is nothing left to send.
	AfterDeliver func()
	failCmd      string
}

// failCommand is the command a FAIL about the write names: EDIT for an edit.
func (w *Write) failCommand() string {
	if w.failCmd == "" {
		return w.Event.Command
	}
	return w.failCmd
}

// Refusal is why the service did not write an event: an IRC numeric (Numeric, with Context[0]
// the target) or a FAIL code, with a text. A refusal with neither is silent (an edit of a
// deleted message). Err is the store's error behind a TEMPORARILY_UNAVAILABLE.
type Refusal struct {
	Command string // the command a FAIL names: the message's, EDIT, DELETE
	Numeric string
	Code    string
	Context []string
	Text    string
	Err     error
}

func (r *Refusal) Error() string {
	what := r.Code
	if r.Numeric != "" {
		what = r.Numeric
	}
	if r.Err != nil {
		return fmt.Sprintf("chat: %s %s: %s: %v", r.Command, what, r.Text, r.Err)
	}
	return fmt.Sprintf("chat: %s %s: %s", r.Command, what, r.Text)
}

// Unwrap returns the store error behind the refusal, if any.
func (r *Refusal) Unwrap() error { return r.Err }

func fail(cmd, code, text string, ctx ...string) *Refusal {
	return &Refusal{Command: cmd, Code: code, Text: text, Context: ctx}
}

// IsChannel reports whether a venue is a channel.
func IsChannel(venue string) bool {
	return strings.HasPrefix(venue, "#") || strings.HasPrefix(venue, "&")
}

// DMVenue is the venue of a conversation between two parties (DIDs, or a DID and the IRC edge's
// name for a guest's connection): dm:<a>,<b> sorted; "" when either is "".
func DMVenue(a, b string) string {
	if a == "" || b == "" {
		return ""
	}
	if b < a {
		a, b = b, a
	}
	return "dm:" + a + "," + b
}

// Send prepares and commits one event.
func (s *Service) Send(ctx context.Context, d Draft) (*Write, *Refusal) {
	w, r := s.Prepare(ctx, d)
	if r != nil {
		return nil, r
	}
	if r := s.Commit(ctx, w)[0]; r != nil {
		return nil, r
	}
	return w, nil
}

// Edit sends text as the new revision of the message of: a PRIVMSG with +draft/edit.
func (s *Service) Edit(ctx context.Context, d Draft, of string) (*Write, *Refusal) {
	d.Tags = withTags(d.Tags, "+draft/edit", of)
	if d.Command == "" || d.Command == "TAGMSG" {
		d.Command = "PRIVMSG"
	}
	return s.Send(ctx, d)
}

// Delete deletes the message of: a TAGMSG with +draft/delete.
func (s *Service) Delete(ctx context.Context, d Draft, of string) (*Write, *Refusal) {
	d.Command, d.Text = "TAGMSG", ""
	d.Tags = withTags(d.Tags, "+draft/delete", of)
	return s.Send(ctx, d)
}

// React adds (or, with remove, takes back) the reaction emoji to the message of: a TAGMSG with
// +react (or +freeq.at/unreact) and +reply.
func (s *Service) React(ctx context.Context, d Draft, of, emoji string, remove bool) (*Write, *Refusal) {
	d.Command, d.Text = "TAGMSG", ""
	key := "+react"
	if remove {
		key = "+freeq.at/unreact"
	}
	d.Tags = withTags(d.Tags, key, emoji)
	d.Tags["+reply"] = of
	return s.Send(ctx, d)
}

func withTags(t map[string]string, k, v string) map[string]string {
	out := CopyTags(t)
	out[k] = v
	return out
}

// CopyTags returns a copy of t, never nil.
func CopyTags(t map[string]string) map[string]string {
	out := make(map[string]string, len(t)+1)
	for k, v := range t {
		out[k] = v
	}
	return out
}

// Commit makes prepared writes durable and publishes them, in order: the messages in one store
// call (one durable commit), then each delete and reaction; each event goes on the Stored stream
// (source Local) once durable, never before. It returns each write's refusal (nil: written):
// EVENTID_IN_USE for a msgid already stored, TEMPORARILY_UNAVAILABLE for a store failure. A
// refused write was neither stored nor published.
func (s *Service) Commit(ctx context.Context, writes ...*Write) []*Refusal {
	out := make([]*Refusal, len(writes))
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	var msgs []*eventstore.Message
	var at []int
	for i, w := range writes {
		if w.Kind == Message && s.cfg.Store != nil {
			msgs = append(msgs, &w.Event)
			at = append(at, i)
		}
	}
	t := s.dl.begin(msgs)
	errs := s.appendAll(ctx, msgs)
	s.dl.stored(t, msgs)
	defer s.dl.delivered(msgs) // also when a Deliver panics: the caller's recover handles that
	for j, err := range errs {
		i := at[j]
		switch {
		case err == nil:
		case errors.Is(err, eventstore.ErrDuplicate):
			out[i] = fail(writes[i].failCommand(), "EVENTID_IN_USE", "That event id is already in use")
		default:
			s.log.Error("store message", "msgid", msgs[j].MsgID, "err", err)
			out[i] = &Refusal{Command: msgs[j].Command, Code: "TEMPORARILY_UNAVAILABLE",
				Text: "The message could not be stored; it was not delivered", Context: []string{msgs[j].Venue}, Err: err}
		}
	}
	for i, w := range writes {
		if out[i] != nil {
			continue
		}
		switch w.Kind {
		case Message:
			if s.cfg.Store != nil {
				s.publish(stream.Item{Kind: stream.KindMessage, Message: &w.Event})
			}
		case Relay:
			s.publish(stream.Item{Kind: stream.KindEphemeral, Message: &w.Event})
		case Deletion:
			out[i] = s.commitDeletion(ctx, w)
		case Reaction:
			out[i] = s.commitReaction(ctx, w)
		}
	}
	for i, w := range writes {
		if out[i] == nil && w.Deliver != nil {
			w.Deliver()
		}
	}
	for i, w := range writes {
		if out[i] == nil && w.AfterDeliver != nil {
			w.AfterDeliver()
		}
	}
	return out
}

// appendAll stores msgs in order in one call and returns each message's own outcome: nil, an
// error wrapping eventstore.ErrDuplicate (the store leaves a duplicate's Seq at 0), or the call's
// error for all of them.
func (s *Service) appendAll(ctx context.Context, msgs []*eventstore.Message) []error {
	errs := make([]error, len(msgs))
	if len(msgs) == 0 {
		return errs
	}
	err := s.cfg.Store.Append(ctx, msgs...)
	switch {
	case err == nil:
	case errors.Is(err, eventstore.ErrDuplicate):
		for i, m := range msgs {
			if m.Seq == 0 {
				errs[i] = err
			}
		}
	case errors.Is(err, eventstore.ErrInvalidArgument) && len(msgs) > 1:
		// Validation fails the whole call before anything is written: store each alone so one
		// bad message fails alone.
		for i, m := range msgs {
			errs[i] = s.cfg.Store.Append(ctx, m)
		}
	default:
		for i := range errs {
			errs[i] = err
		}
	}
	return errs
}

func (s *Service) commitDeletion(ctx context.Context, w *Write) *Refusal {
	d := w.Deletion
	if err := s.cfg.Store.DeleteAt(ctx, d.RootMsgID, d.At, d.Origin, d.Deleter); err != nil {
		s.log.Error("delete message", "msgid", d.RootMsgID, "err", err)
		r := fail("DELETE", "TEMPORARILY_UNAVAILABLE", "The message could not be deleted", d.RootMsgID)
		r.Err = err
		return r
	}
	s.publish(stream.Item{Kind: stream.KindDeletion, Deletion: d})
	return nil
}

func (s *Service) commitReaction(ctx context.Context, w *Write) *Refusal {
	if _, err := s.cfg.Store.FileReaction(ctx, *w.Reaction); err != nil {
		if errors.Is(err, eventstore.ErrDuplicate) {
			return fail("TAGMSG", "EVENTID_IN_USE", "That event id is already in use")
		}
		s.log.Error("store reaction", "root", w.Reaction.Root, "err", err)
		r := fail("TAGMSG", "TEMPORARILY_UNAVAILABLE", "The reaction could not be stored")
		r.Err = err
		return r
	}
	s.publish(stream.Item{Kind: stream.KindReaction, Reaction: w.Reaction})
	return nil
}

// publish hands an item to the Stored stream with source Local.
func (s *Service) publish(it stream.Item) {
	if s.cfg.Stored != nil {
		it.Source = stream.Local
		s.cfg.Stored.Publish(it)
	}
}

// DeliverAsNode builds a message this node sends to its own members only (d.Venue: a channel or
// a DM venue), neither stored nor published: msgid (a new one when "") and time at (now when
// zero), did:web:<node name> as sender, the server key's signature when it is a signed document.
// Every node that delivers the same event gives it the same msgid when the caller derives one.
func (s *Service) DeliverAsNode(d Draft, msgid string, at time.Time) (eventstore.Message, error) {
	if at.IsZero() {
		at = s.cfg.Now()
	}
	at = at.UTC().Truncate(time.Millisecond)
	if msgid == "" {
		msgid = s.NewMsgID(at)
	}
	did := "did:web:" + s.cfg.NodeName
	tags := CopyTags(d.Tags)
	venue, err := signing.ParseVenue(d.Venue)
	if err != nil {
		return eventstore.Message{}, fmt.Errorf("chat: node delivery: %w", err)
	}
	doc, err := signing.DocumentFromTags(d.Command, signing.Envelope{From: did, MsgID: msgid, Venue: venue}, d.Text, tags)
	switch {
	case errors.Is(err, signing.ErrNotSignable):
	case err != nil:
		return eventstore.Message{}, fmt.Errorf("chat: node delivery: %w", err)
	case s.cfg.Key != nil:
		canonical, err := doc.Canonical()
		if err != nil {
			return eventstore.Message{}, fmt.Errorf("chat: node delivery: %w", err)
		}
		tags[TagSig] = signing.Sign(s.cfg.Key, canonical)
	}
	return eventstore.Message{MsgID: msgid, Venue: d.Venue, Command: d.Command, Sender: d.Mask, SenderNick: d.Nick,
		SenderDID: did, Text: d.Text, Tags: tags, Time: at, Origin: s.cfg.NodeName}, nil
}

// SendAsNode writes a message this node itself sends to a channel (d.Venue), as
// did:web:<node name> under d.Nick and d.Mask: a new msgid, the server key's signature when the
// event is a signed document (a TAGMSG that is none goes unsigned, as typing does), then, with
// store, stored and published as a Message; otherwise published as a Relay. d's sender checks
// and d.Check are not applied: the caller vouches for what its node says.
//
// A document the node already signed (an act receipt filed in the state) keeps its id and
// signature: d.Tags carries them as +freeq.at/eventid (a ULID, which becomes the msgid) and
// +freeq.at/sig, which must verify against this node's key over the document with that msgid.
// Every copy of it then carries one id and one signature.
func (s *Service) SendAsNode(ctx context.Context, d Draft, store bool) (*Write, error) {
	if !IsChannel(d.Venue) {
		return nil, fmt.Errorf("chat: node message: %q is not a channel", d.Venue)
	}
	if store && s.cfg.Store == nil {
		return nil, errors.New("chat: node message: this node keeps no event store")
	}
	now := s.cfg.Now().UTC().Truncate(time.Millisecond)
	msgid := s.NewMsgID(now)
	did := "did:web:" + s.cfg.NodeName
	tags := CopyTags(d.Tags)
	signed := tags[TagSig]
	if id, ok := tags[TagEventID]; ok {
		delete(tags, TagEventID)
		if _, err := ulid.ParseStrict(id); err != nil || strings.ToUpper(id) != id {
			return nil, fmt.Errorf("chat: node message: event id %q is not a ULID", id)
		}
		msgid = id
	}
	venue, err := signing.ChannelVenue(d.Venue)
	if err != nil {
		return nil, fmt.Errorf("chat: node message: %w", err)
	}
	doc, err := signing.DocumentFromTags(d.Command, signing.Envelope{From: did, MsgID: msgid, Venue: venue}, d.Text, tags)
	switch {
	case errors.Is(err, signing.ErrNotSignable):
		if signed != "" {
			return nil, errors.New("chat: node message: a signature on a message that is no signed document")
		}
	case err != nil:
		return nil, fmt.Errorf("chat: node message: %w", err)
	case s.cfg.Key != nil:
		canonical, err := doc.Canonical()
		if err != nil {
			return nil, fmt.Errorf("chat: node message: %w", err)
		}
		if signed == "" {
			tags[TagSig] = signing.Sign(s.cfg.Key, canonical)
			break
		}
		pub := s.cfg.Key.Public().(ed25519.PublicKey)
		if v, _ := signing.Verify(canonical, signed, func(kid string) (ed25519.PublicKey, bool) { return pub, kid == signing.KID(pub) }); v != signing.Valid {
			return nil, errors.New("chat: node message: the signature it carries is not this node's over this document")
		}
	case signed != "":
		return nil, errors.New("chat: node message: a signature without a node key to check it")
	}
	w := &Write{Kind: Relay, failCmd: d.Command, Event: eventstore.Message{MsgID: msgid, Venue: d.Venue, Command: d.Command,
		Sender: d.Mask, SenderNick: d.Nick, SenderDID: did, Text: d.Text, Tags: tags, Time: now, Origin: s.cfg.NodeName}}
	if store {
		w.Kind = Message
	}
	if d.Deliver != nil {
		w.Deliver = func() { d.Deliver(w.Event) }
	}
	if r := s.Commit(ctx, w)[0]; r != nil {
		return nil, fmt.Errorf("chat: node message: store: %w", r)
	}
	return w, nil
}
