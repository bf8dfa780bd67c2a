package exchange

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/limits"
	"github.com/palaver-chat/palaver/node/signing"
)

// Event is one stored chat event as it travels between nodes.
type Event struct {
	OriginSeq     int64             `json:"origin_seq"`
	MsgID         string            `json:"msgid"`
	Venue         string            `json:"venue"`
	Command       string            `json:"command"`
	Sender        string            `json:"sender"`
	SenderNick    string            `json:"sender_nick"`
	SenderDID     string            `json:"sender_did,omitempty"`
	Text          string            `json:"text"`
	Tags          map[string]string `json:"tags,omitempty"`
	TimeMS        int64             `json:"time_ms"`
	ReplacesMsgID string            `json:"replaces_msgid,omitempty"`
	// Incarnation and Public: where in its channel's life the message was written, as the origin
	// stamped it (see eventstore's "Channel incarnations").
	Incarnation string `json:"incarnation,omitempty"`
	Public      bool   `json:"public,omitempty"`
	// Status: on an ephemeral status message only, the lowest channel prefix that receives it.
	Status string `json:"status,omitempty"`
}

// Batch is what a pull returns: events of one origin, in origin seq order, the deletes made on
// that origin, in their own order, and the reactions made on that origin in their own order.
type Batch struct {
	Origin    string         `json:"origin"` // the origin node's DID
	Events    []Event        `json:"events"`
	Deletions []pullDeletion `json:"deletions,omitempty"`
	Reactions []pullReaction `json:"reactions,omitempty"`
	// More: the answer stopped before limits.PullBytes with rows left in a log it was asked for;
	// the puller asks again after what it got.
	More bool `json:"more,omitempty"`
}

// Push is what POST /internal/v1/events carries: ephemeral TAGMSGs and status messages of one
// origin, never stored nor pulled. Events, Deletions and Reactions are there only to be refused
// when not empty (stored items travel on the stream): a node of v0.1.0 sends "events": [].
type Push struct {
	Origin    string            `json:"origin"` // the origin node's DID
	Ephemeral []Event           `json:"ephemeral,omitempty"`
	Events    []json.RawMessage `json:"events,omitempty"`
	Deletions []json.RawMessage `json:"deletions,omitempty"`
	Reactions []json.RawMessage `json:"reactions,omitempty"`
}

// A delete is an eventstore.Deletion and a reaction an eventstore.ReactionEvent everywhere: in
// the stream's frames (frame.go), the chat service and the store. pullDeletion and pullReaction
// are only their JSON form in a pull's answer, whose field names nodes of v0.1.0 read and write:
// origin_seq for Seq, at_ms for At in unix milliseconds.
type pullDeletion struct {
	OriginSeq int64             `json:"origin_seq"`
	RootMsgID string            `json:"root_msgid"`
	AtMS      int64             `json:"at_ms"`
	Venue     string            `json:"venue"`
	Sender    string            `json:"sender"`
	SenderDID string            `json:"sender_did,omitempty"`
	Tags      map[string]string `json:"tags,omitempty"`
}

type pullReaction struct {
	OriginSeq   int64             `json:"origin_seq"`
	EventID     string            `json:"event_msgid"`
	Root        string            `json:"root_msgid"`
	Reactor     string            `json:"reactor"`
	ReactorNick string            `json:"reactor_nick"`
	Emoji       string            `json:"emoji"`
	Remove      bool              `json:"remove,omitempty"`
	AtMS        int64             `json:"at_ms"`
	Venue       string            `json:"venue"`
	Sender      string            `json:"sender"`
	SenderDID   string            `json:"sender_did,omitempty"`
	Tags        map[string]string `json:"tags,omitempty"`
}

func pullDeletionOf(d eventstore.Deletion) pullDeletion {
	return pullDeletion{OriginSeq: d.Seq, RootMsgID: d.RootMsgID, AtMS: d.At.UnixMilli(), Venue: d.Venue,
		Sender: d.Sender, SenderDID: d.SenderDID, Tags: d.Tags}
}

func (p pullDeletion) deletion() eventstore.Deletion {
	return eventstore.Deletion{Seq: p.OriginSeq, RootMsgID: p.RootMsgID, At: time.UnixMilli(p.AtMS).UTC(), Venue: p.Venue,
		Deleter: eventstore.Deleter{Sender: p.Sender, SenderDID: p.SenderDID, Tags: p.Tags}}
}

func pullReactionOf(r eventstore.ReactionEvent) pullReaction {
	return pullReaction{OriginSeq: r.Seq, EventID: r.EventID, Root: r.Root, Reactor: r.Reactor, ReactorNick: r.ReactorNick,
		Emoji: r.Emoji, Remove: r.Remove, AtMS: r.At.UnixMilli(), Venue: r.Venue, Sender: r.Sender,
		SenderDID: r.SenderDID, Tags: r.Tags}
}

func (p pullReaction) reaction() eventstore.ReactionEvent {
	return eventstore.ReactionEvent{Seq: p.OriginSeq, EventID: p.EventID, Root: p.Root, Reactor: p.Reactor,
		ReactorNick: p.ReactorNick, Emoji: p.Emoji, Remove: p.Remove, At: time.UnixMilli(p.AtMS).UTC(), Venue: p.Venue,
		Sender: p.Sender, SenderDID: p.SenderDID, Tags: p.Tags}
}

func eventOf(m eventstore.Message) Event {
	return Event{OriginSeq: m.Seq, MsgID: m.MsgID, Venue: m.Venue, Command: m.Command, Sender: m.Sender,
		SenderNick: m.SenderNick, SenderDID: m.SenderDID, Text: m.Text, Tags: m.Tags, TimeMS: m.Time.UnixMilli(),
		ReplacesMsgID: m.ReplacesMsgID, Incarnation: m.Incarnation, Public: m.Public, Status: m.Status}
}

func (e Event) message(originName string) *eventstore.Message {
	return &eventstore.Message{MsgID: e.MsgID, Venue: e.Venue, Command: e.Command, Sender: e.Sender,
		SenderNick: e.SenderNick, SenderDID: e.SenderDID, Text: e.Text, Tags: e.Tags, Time: time.UnixMilli(e.TimeMS),
		ReplacesMsgID: e.ReplacesMsgID, Origin: originName, Incarnation: e.Incarnation, Public: e.Public, Status: e.Status}
}

// validate checks what a receiver relies on before storing an event: its form, and the limits of
// one item (node/limits). An error wraps errOversize when only a limit is passed.
func (e Event) validate() error {
	switch {
	case e.MsgID == "" || len(e.MsgID) > limits.MsgIDBytes:
		return errors.New("bad msgid")
	case e.Venue == "" || len(e.Venue) > limits.VenueBytes || !(strings.HasPrefix(e.Venue, "#") || strings.HasPrefix(e.Venue, "&") || strings.HasPrefix(e.Venue, "dm:")):
		return errors.New("bad venue")
	case e.Command != "PRIVMSG" && e.Command != "NOTICE" && e.Command != "TAGMSG":
		return errors.New("bad command")
	case e.OriginSeq <= 0 || e.TimeMS <= 0:
		return errors.New("bad sequence or time")
	case len(e.Text) > limits.TextBytes:
		return fmt.Errorf("%w: text of %d bytes, at most %d", errOversize, len(e.Text), limits.TextBytes)
	case len(e.Sender) > limits.NameBytes || len(e.SenderNick) > limits.NameBytes || len(e.SenderDID) > limits.NameBytes ||
		len(e.Incarnation) > limits.NameBytes:
		return fmt.Errorf("%w: a name over %d bytes", errOversize, limits.NameBytes)
	case len(e.ReplacesMsgID) > limits.MsgIDBytes || len(e.Status) > 1:
		return errors.New("bad replaced msgid or status")
	}
	return checkTags(e.Tags)
}

// checkTags checks an item's tags against the limits of one item.
func checkTags(tags map[string]string) error {
	if len(tags) > limits.Tags {
		return fmt.Errorf("%w: %d tags, at most %d", errOversize, len(tags), limits.Tags)
	}
	n := 0
	for k, v := range tags {
		n += len(k) + len(v)
	}
	if n > limits.TagBytes {
		return fmt.Errorf("%w: tags of %d bytes, at most %d", errOversize, n, limits.TagBytes)
	}
	return nil
}

// Request signing. Headers: Palaver-Node (the signer's DID), Palaver-Date (unix seconds) and
// Palaver-Signature (ed25519:<kid>:<base64url-nopad sig>) over
// "<METHOD>\n<path?query>\n<date>\n<body>".
const (
	headerNode      = "Palaver-Node"
	headerDate      = "Palaver-Date"
	headerSignature = "Palaver-Signature"
	maxClockSkew    = 5 * time.Minute
)

func signingInput(method, pathQuery, date string, body []byte) []byte {
	out := make([]byte, 0, len(method)+len(pathQuery)+len(date)+len(body)+3)
	out = append(out, method...)
	out = append(out, '\n')
	out = append(out, pathQuery...)
	out = append(out, '\n')
	out = append(out, date...)
	out = append(out, '\n')
	return append(out, body...)
}

// sign sets the signature headers on an outgoing request or response header set.
func sign(h http.Header, priv ed25519.PrivateKey, did, method, pathQuery string, body []byte, now time.Time) {
	date := strconv.FormatInt(now.Unix(), 10)
	pub := priv.Public().(ed25519.PublicKey)
	sig := ed25519.Sign(priv, signingInput(method, pathQuery, date, body))
	h.Set(headerNode, did)
	h.Set(headerDate, date)
	h.Set(headerSignature, signing.FormatSigTag(signing.KID(pub), sig))
}

// SignRequest sets the signature headers of a node's request on the cluster plane that is not the
// exchange's own (media bytes): what VerifyRequest checks.
func SignRequest(h http.Header, priv ed25519.PrivateKey, did, method, pathQuery string, body []byte, now time.Time) {
	sign(h, priv, did, method, pathQuery, body, now)
}

// KeyLookup finds a cluster node's registered server key by DID and kid.
type KeyLookup func(did, kid string) (ed25519.PublicKey, bool)

// verify checks the signature headers and returns the signer's DID.
func verify(h http.Header, keys KeyLookup, method, pathQuery string, body []byte, now time.Time) (string, error) {
	did, _, err := verifyKey(h, keys, method, pathQuery, body, now)
	return did, err
}

// verifyKey checks the signature headers and returns the signer's DID and the key that signed.
func verifyKey(h http.Header, keys KeyLookup, method, pathQuery string, body []byte, now time.Time) (string, ed25519.PublicKey, error) {
	did, date := h.Get(headerNode), h.Get(headerDate)
	if did == "" || date == "" {
		return "", nil, errors.New("unsigned request")
	}
	secs, err := strconv.ParseInt(date, 10, 64)
	if err != nil {
		return "", nil, errors.New("bad date")
	}
	if d := now.Sub(time.Unix(secs, 0)); d > maxClockSkew || d < -maxClockSkew {
		return "", nil, errors.New("stale or future-dated request")
	}
	tag, err := signing.ParseSigTag(h.Get(headerSignature))
	if err != nil {
		return "", nil, fmt.Errorf("signature: %w", err)
	}
	pub, ok := keys(did, tag.KID)
	if !ok {
		return "", nil, fmt.Errorf("%s: unknown signer or key", did)
	}
	if !ed25519.Verify(pub, signingInput(method, pathQuery, date, body), tag.Signature) {
		return "", nil, errors.New("signature does not verify")
	}
	return did, pub, nil
}
