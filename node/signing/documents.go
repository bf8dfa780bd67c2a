package signing

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/palaver-chat/palaver/node/canonical"
)

// Document is a signable event. Its canonical form is what is signed.
type Document interface {
	Canonical() ([]byte, error)
}

// ErrMissingField matches every *MissingFieldError.
var ErrMissingField = errors.New("missing mandatory field")

// MissingFieldError names a mandatory document field that was empty.
type MissingFieldError struct {
	Kind  string
	Field string
}

func (e *MissingFieldError) Error() string {
	return fmt.Sprintf("signing: %s document: %s: %v", e.Kind, e.Field, ErrMissingField)
}

// Is makes errors.Is(err, ErrMissingField) true.
func (e *MissingFieldError) Is(target error) bool { return target == ErrMissingField }

// Envelope is what every chat document carries: who signed, the id they
// minted, and where it was delivered.
type Envelope struct {
	From  string // the signer's DID
	MsgID string // the ULID the signer minted (the event's own id)
	Venue Venue
}

// fields starts a document map with from, msgid and target, checking each.
func (e Envelope) fields(kind string) (map[string]any, error) {
	if e.From == "" {
		return nil, &MissingFieldError{Kind: kind, Field: "from"}
	}
	if e.MsgID == "" {
		return nil, &MissingFieldError{Kind: kind, Field: "msgid"}
	}
	if e.Venue.IsZero() {
		return nil, fmt.Errorf("signing: %s document: %w", kind, ErrNoVenue)
	}
	doc := make(map[string]any, 8)
	doc["from"], doc["msgid"], doc["target"] = e.From, e.MsgID, e.Venue.String()
	return doc, nil
}

// Message is a PRIVMSG or NOTICE, an edit included. Its document has no
// `kind`: {body, coord?, edit?, from, msgid, reply?, target}.
type Message struct {
	Envelope
	// Body is the wire body: ciphertext under E2EE, the assembled text with
	// real newlines for a draft/multiline batch.
	Body string
	// Reply and Edit are root msgids, or empty.
	Reply string
	Edit  string
	// Tags are the wire tags as received, values IRC-unescaped. Only the
	// closed coord set (see CoordKeys) is covered.
	Tags map[string]string
}

// Canonical returns the message's JCS document.
func (m Message) Canonical() ([]byte, error) {
	doc, err := m.fields("message")
	if err != nil {
		return nil, err
	}
	doc["body"] = hashRef(m.Body)
	putOptional(doc, "reply", m.Reply)
	putOptional(doc, "edit", m.Edit)
	if coord := Coord(m.Tags); len(coord) > 0 {
		doc["coord"] = coord
	}
	return encode("message", doc)
}

// Mutation kinds.
const (
	KindDelete  = "delete"
	KindReact   = "react"
	KindUnreact = "unreact"
)

// Mutation is a delete, react or unreact aimed at a root message:
// {emoji?, from, kind, msgid, subject, target}. Emoji is covered only for
// react and unreact, where it is mandatory.
type Mutation struct {
	Envelope
	Kind    string // KindDelete, KindReact or KindUnreact
	Subject string // the root msgid acted on
	Emoji   string
}

// Canonical returns the mutation's JCS document.
func (m Mutation) Canonical() ([]byte, error) {
	switch m.Kind {
	case KindDelete, KindReact, KindUnreact:
	default:
		return nil, fmt.Errorf("signing: mutation kind %q is not delete, react or unreact", truncate(m.Kind))
	}
	doc, err := m.fields(m.Kind)
	if err != nil {
		return nil, err
	}
	doc["kind"] = m.Kind
	if m.Subject == "" {
		return nil, &MissingFieldError{Kind: m.Kind, Field: "subject"}
	}
	doc["subject"] = m.Subject
	if m.Kind != KindDelete {
		if m.Emoji == "" {
			return nil, &MissingFieldError{Kind: m.Kind, Field: "emoji"}
		}
		doc["emoji"] = m.Emoji
	}
	return encode(m.Kind, doc)
}

// KindCoordination is the kind of a coordination event document.
const KindCoordination = "coordination"

// Coordination is a TAGMSG carrying +freeq.at/event:
// {event, evidence?, from, kind:"coordination", msgid, payload, ref?, target}.
type Coordination struct {
	Envelope
	Event string // +freeq.at/event, mandatory
	// Payload is the wire value of +freeq.at/payload (IRC-unescaped, else
	// verbatim); the document covers its hash, "sha256:<hex>". An absent
	// payload hashes as the empty string.
	Payload  string
	Ref      string // +freeq.at/ref, else +freeq.at/task-id
	Evidence string // +freeq.at/evidence-type
}

// Canonical returns the coordination event's JCS document.
func (c Coordination) Canonical() ([]byte, error) {
	doc, err := c.fields(KindCoordination)
	if err != nil {
		return nil, err
	}
	if c.Event == "" {
		return nil, &MissingFieldError{Kind: KindCoordination, Field: "event"}
	}
	doc["kind"] = KindCoordination
	doc["event"] = c.Event
	doc["payload"] = hashRef(c.Payload)
	putOptional(doc, "ref", c.Ref)
	putOptional(doc, "evidence", c.Evidence)
	return encode(KindCoordination, doc)
}

// hashRef returns "sha256:" + lowercase hex of SHA-256 over s's UTF-8 bytes.
func hashRef(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// putOptional sets doc[key] unless value is empty: an empty optional field
// is the same as an absent one.
func putOptional(doc map[string]any, key, value string) {
	if value != "" {
		doc[key] = value
	}
}

func encode(kind string, doc any) ([]byte, error) {
	out, err := canonical.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("signing: %s document: %w", kind, err)
	}
	return out, nil
}
