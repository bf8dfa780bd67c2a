package eventstore

import (
	"errors"
	"log/slog"
	"time"
)

// Message is one stored chat event. In the views (Before, After, ..., Search) a root is returned in
// its current form: Text and Tags come from its latest revision, Revision names that revision, and
// MsgID, Seq and Time stay the root's. Get and Root return raw rows.
type Message struct {
	Seq           int64             // local row id, assigned by the store
	MsgID         string            // ULID, unique
	Venue         string            // "#chan" (lowercased by caller) or "dm:<didA>,<didB>"
	Command       string            // "PRIVMSG" | "NOTICE" | "TAGMSG"
	Sender        string            // nick!user@host at send time
	SenderNick    string            //
	SenderDID     string            // "" for guests
	Text          string            //
	Tags          map[string]string // stored tags (client + tags such as +freeq.at/sig, +reply); NOT msgid/time/account
	Time          time.Time         // server time, millisecond precision (stored as unix ms)
	ReplacesMsgID string            // for an edit: the ROOT msgid it revises ("" otherwise)
	Origin        string            // node name that originated it
	DeletedAt     time.Time         // zero when not deleted (set on reads of raw rows only)
	Revision      string            // views only: msgid of the latest edit, "" if none
	// Incarnation and Public say where in a channel's life the message was written: the channel's
	// incarnation then, and whether the channel was discoverable then. Append fills them in for a
	// channel message that comes without an Incarnation (see Options.Scope); "" and false for DMs.
	Incarnation string
	Public      bool
	// ResumeFrom is where a reader who read this message and resumes after it starts (AFTER
	// msgid=, ResumeAfter): the lowest seq of its venue that this node had not yet delivered to
	// its readers when the message was stored. Rows stored before it but delivered after it are
	// at or after ResumeFrom. 0: not recorded (the row's own seq + 1). Stored by Append, read by
	// ResumeAfter only.
	ResumeFrom int64
	// Status is set on a live-only status message (IRC STATUSMSG: "@", "%" or "+"), relayed and
	// never stored: only the channel's members with that prefix or a higher one get it.
	Status string
}

// Bound is a position in a venue's history: by msgid (resolved to its root's (time, seq)) or by
// time (millisecond precision). MsgID wins when both are set. The zero Bound is open.
type Bound struct {
	Time  time.Time
	MsgID string
}

// IsZero reports whether b is the open bound.
func (b Bound) IsZero() bool { return b.MsgID == "" && b.Time.IsZero() }

// Options configure Open.
type Options struct {
	// Path of the database file. It is created with its parent directory when missing. ":memory:"
	// and "file:" URIs are refused: the store exists to be durable.
	Path   string
	Logger *slog.Logger
	// MaxBatch caps how many messages one write of the intake log holds (default 512); the writer
	// applies up to eight times as many in one transaction.
	MaxBatch int
	// Scope tells the store about the channel a venue names now (see "Channel incarnations" in
	// doc.go). Append stamps channel messages with it, and every view of a channel venue serves
	// only the messages the channel may show. Nil: nothing is stamped or filtered (tests, tools).
	Scope Scope
	// NoSync turns fsync off (synchronous=OFF). For benchmarks and tests only: a crash may lose
	// acknowledged messages.
	NoSync bool
}

// Scope answers, for a channel venue, the channel's current incarnation and whether it is public
// (discoverable) now; ok is false when no such channel exists. It must be cheap and safe for
// concurrent use: every Append and every read of a channel venue calls it.
type Scope func(venue string) (incarnation string, public, ok bool)

// MaxLimit caps the number of messages any single read returns.
const MaxLimit = 10000

// DefaultMaxBatch is Options.MaxBatch when unset.
const DefaultMaxBatch = 512

// Errors returned by the store, possibly wrapped; test with errors.Is.
var (
	// ErrNotFound: no stored row has that msgid (or its root is not stored).
	ErrNotFound = errors.New("eventstore: message not found")
	// ErrDuplicate: Append was given a msgid that is already stored.
	ErrDuplicate = errors.New("eventstore: duplicate msgid")
	// ErrClosed: the store has been closed.
	ErrClosed = errors.New("eventstore: store closed")
	// ErrInvalidArgument: a caller bug (limit <= 0, a message without msgid, an open Between bound...).
	ErrInvalidArgument = errors.New("eventstore: invalid argument")
)
