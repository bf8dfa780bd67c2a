package signing

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/palaver-chat/palaver/node/canonical"
)

// BundleVersion is the evidence bundle format this package writes and reads.
const BundleVersion = "2"

// Bundle is a channel's evidence export (GET /api/v1/channels/{name}/evidence):
// its messages, oldest first, with the keys that signed them, sealed by the
// server key over the JCS of everything but bundle_signature.
type Bundle struct {
	BundleVersion   string            `json:"bundle_version"`
	ServerName      string            `json:"server_name"`
	ServerPublicKey string            `json:"server_public_key"` // base64url
	Channel         string            `json:"channel"`
	ExportedAt      string            `json:"exported_at"` // RFC 3339
	MessageCount    int               `json:"message_count"`
	Keys            map[string]string `json:"keys"`     // kid → base64url public key, for every kid a sig names
	DIDKeys         map[string]string `json:"did_keys"` // DID → latest base64url public key (for legacy sigs)
	Messages        []BundleMessage   `json:"messages"`
	// Purpose names what the server key signs here (BundlePurpose), inside the signed JCS, so
	// that the signature can never pass for one over another kind of document the key signs.
	// freeq's bundles have none and still verify.
	Purpose         string `json:"purpose,omitempty"`
	BundleSignature string `json:"bundle_signature,omitempty"` // base64url-nopad ed25519
}

// BundlePurpose is the purpose of a bundle this package signs.
const BundlePurpose = "palaver evidence bundle v1"

// BundleMessage is one stored message in a bundle.
type BundleMessage struct {
	MsgID         string            `json:"msgid"`
	Channel       string            `json:"channel"`
	Sender        string            `json:"sender"` // nick at the time
	SenderDID     NullString        `json:"sender_did"`
	Text          string            `json:"text"`
	Timestamp     int64             `json:"timestamp"` // Unix seconds
	Signature     NullString        `json:"signature"` // the sig tag value
	ReplacesMsgID NullString        `json:"replaces_msgid"`
	Tags          map[string]string `json:"tags"`
}

// NullString is a string written as JSON null when empty, as freeq writes
// its optional columns.
type NullString string

// MarshalJSON writes null for the empty string.
func (s NullString) MarshalJSON() ([]byte, error) {
	if s == "" {
		return []byte("null"), nil
	}
	return json.Marshal(string(s))
}

// UnmarshalJSON reads null as the empty string.
func (s *NullString) UnmarshalJSON(data []byte) error {
	if bytes.Equal(data, []byte("null")) {
		*s = ""
		return nil
	}
	var v string
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("signing: nullable string: %w", err)
	}
	*s = NullString(v)
	return nil
}

// SignBundle seals b with the server key. It fills what follows from the
// bundle itself (bundle_version, server_public_key, message_count, empty
// maps and lists instead of null) and refuses a server_public_key that is
// not priv's.
func SignBundle(priv ed25519.PrivateKey, b *Bundle) error {
	if len(priv) != ed25519.PrivateKeySize {
		return fmt.Errorf("signing: bundle: private key is %d bytes, want %d", len(priv), ed25519.PrivateKeySize)
	}
	pub := EncodePublicKey(priv.Public().(ed25519.PublicKey))
	if b.ServerPublicKey == "" {
		b.ServerPublicKey = pub
	} else if b.ServerPublicKey != pub {
		return errors.New("signing: bundle: server_public_key is not the signing key's")
	}
	if b.BundleVersion == "" {
		b.BundleVersion = BundleVersion
	}
	if b.Keys == nil {
		b.Keys = map[string]string{}
	}
	if b.DIDKeys == nil {
		b.DIDKeys = map[string]string{}
	}
	if b.Messages == nil {
		b.Messages = []BundleMessage{}
	}
	for i := range b.Messages {
		if b.Messages[i].Tags == nil {
			b.Messages[i].Tags = map[string]string{}
		}
	}
	b.MessageCount = len(b.Messages)
	b.Purpose = BundlePurpose
	b.BundleSignature = ""
	raw, err := json.Marshal(b)
	if err != nil {
		return fmt.Errorf("signing: bundle: encode: %w", err)
	}
	signed, err := canonical.Transform(raw)
	if err != nil {
		return fmt.Errorf("signing: bundle: %w", err)
	}
	b.BundleSignature = b64.EncodeToString(ed25519.Sign(priv, signed))
	return nil
}

// Errors from VerifyBundle, each wrapped with the details.
var (
	// ErrBundleMalformed: the bundle cannot be read or is inconsistent.
	ErrBundleMalformed = errors.New("malformed evidence bundle")
	// ErrBundleSignature: the bundle signature does not verify against
	// server_public_key.
	ErrBundleSignature = errors.New("bundle signature does not verify")
	// ErrMessageInvalid: a message's signature does not verify against the
	// key its kid names.
	ErrMessageInvalid = errors.New("message signature is invalid")
)

// Report is what VerifyBundle found.
type Report struct {
	Channel    string
	ServerName string
	ServerKID  string
	ExportedAt string
	// BundleSignature is Valid, Invalid, or Unverifiable (absent or
	// unreadable signature or server key).
	BundleSignature Verdict
	Messages        []MessageReport
}

// MessageReport is the verdict on one message. Unsigned messages (guests)
// are reported with Signed false and skipped.
type MessageReport struct {
	MsgID     string
	Sender    string
	SenderDID string
	Signed    bool
	KID       string // the kid the sig names, when it parses
	ByServer  bool   // signed with the server key (proves relay, not authorship)
	Verdict   Verdict
	Reason    Reason
}

// Tally counts the signed messages by verdict, and the unsigned ones.
func (r Report) Tally() (valid, invalid, unverifiable, unsigned int) {
	for _, m := range r.Messages {
		switch {
		case !m.Signed:
			unsigned++
		case m.Verdict == Valid:
			valid++
		case m.Verdict == Invalid:
			invalid++
		default:
			unverifiable++
		}
	}
	return valid, invalid, unverifiable, unsigned
}

// VerifyBundle checks an evidence bundle: the bundle signature against
// server_public_key, then every signed message by rebuilding its document
// from the stored fields and tags (from = sender_did or the account tag,
// target = the channel lowercased, edit = replaces_msgid, reply and coord
// from the tags) and resolving keys from `keys` by kid. Unsigned messages
// are skipped and unverifiable ones reported; a bad bundle signature or any
// invalid message makes the error non-nil. The report is filled as far as
// the bundle could be read, error or not.
func VerifyBundle(data []byte) (Report, error) {
	var report Report
	signedBytes, sig, err := bundleSigningInput(data)
	if err != nil {
		return report, err
	}
	var b Bundle
	if err := json.Unmarshal(data, &b); err != nil {
		return report, fmt.Errorf("signing: %w: %w", ErrBundleMalformed, err)
	}
	report.Channel, report.ServerName, report.ExportedAt = b.Channel, b.ServerName, b.ExportedAt
	var problems []error
	if b.BundleVersion != BundleVersion {
		problems = append(problems, fmt.Errorf("signing: %w: bundle_version %q, want %q", ErrBundleMalformed, truncate(b.BundleVersion), BundleVersion))
	}
	if b.Purpose != "" && b.Purpose != BundlePurpose {
		problems = append(problems, fmt.Errorf("signing: %w: purpose %q, want %q or none", ErrBundleMalformed, truncate(b.Purpose), BundlePurpose))
	}
	if b.MessageCount != len(b.Messages) {
		problems = append(problems, fmt.Errorf("signing: %w: message_count %d but %d messages", ErrBundleMalformed, b.MessageCount, len(b.Messages)))
	}

	keys := Keys{}
	serverKey, keyErr := ParsePublicKey(b.ServerPublicKey)
	switch {
	case keyErr != nil:
		report.BundleSignature = Unverifiable
		problems = append(problems, fmt.Errorf("signing: %w: server_public_key: %w", ErrBundleSignature, keyErr))
	case sig == nil:
		report.BundleSignature = Unverifiable
		problems = append(problems, fmt.Errorf("signing: %w: bundle_signature is not 64 bytes of base64url", ErrBundleSignature))
	default:
		report.ServerKID = KID(serverKey)
		keys[report.ServerKID] = serverKey
		if Ed25519Verify(serverKey, signedBytes, sig) {
			report.BundleSignature = Valid
		} else {
			report.BundleSignature = Invalid
			problems = append(problems, fmt.Errorf("signing: %w against server key %s", ErrBundleSignature, report.ServerKID))
		}
	}
	for kid, encoded := range b.Keys {
		if pub, err := ParsePublicKey(encoded); err == nil {
			keys[kid] = pub
		}
	}

	for _, m := range b.Messages {
		mr := verifyBundleMessage(b.Channel, m, keys.Lookup, report.ServerKID)
		if mr.Verdict == Invalid {
			problems = append(problems, fmt.Errorf("signing: message %s from %s: %w (%s)", truncate(m.MsgID), truncate(mr.Sender), ErrMessageInvalid, mr.Reason))
		}
		report.Messages = append(report.Messages, mr)
	}
	return report, errors.Join(problems...)
}

// bundleSigningInput returns the bytes the bundle signature covers (the JCS
// of the bundle without bundle_signature, over whatever fields the bundle
// has, known to this package or not) and the decoded signature, nil when it
// is absent or unreadable.
func bundleSigningInput(data []byte) ([]byte, []byte, error) {
	canon, err := canonical.Transform(data)
	if err != nil {
		return nil, nil, fmt.Errorf("signing: %w: %w", ErrBundleMalformed, err)
	}
	var fields map[string]any
	dec := json.NewDecoder(bytes.NewReader(canon))
	dec.UseNumber()
	if err := dec.Decode(&fields); err != nil {
		return nil, nil, fmt.Errorf("signing: %w: not a JSON object: %w", ErrBundleMalformed, err)
	}
	var sig []byte
	if text, ok := fields["bundle_signature"].(string); ok {
		if raw, err := decodeB64URL(text); err == nil && len(raw) == ed25519.SignatureSize {
			sig = raw
		}
	}
	delete(fields, "bundle_signature")
	signed, err := canonical.Marshal(fields)
	if err != nil {
		return nil, nil, fmt.Errorf("signing: %w: %w", ErrBundleMalformed, err)
	}
	return signed, sig, nil
}

// verifyBundleMessage rebuilds one stored message's document and checks its
// signature.
func verifyBundleMessage(bundleChannel string, m BundleMessage, lookup KeyLookup, serverKID string) MessageReport {
	mr := MessageReport{MsgID: m.MsgID, Sender: m.Sender, SenderDID: string(m.SenderDID)}
	tagValue := string(m.Signature)
	if tagValue == "" {
		tagValue = SigFromTags(m.Tags)
	}
	if tagValue == "" {
		mr.Verdict, mr.Reason = Unverifiable, ReasonUnsigned
		return mr
	}
	mr.Signed = true
	if tag, err := ParseSigTag(tagValue); err == nil {
		mr.KID = tag.KID
		mr.ByServer = tag.KID == serverKID
	}
	from := string(m.SenderDID)
	if from == "" {
		from = m.Tags["account"]
	}
	channel := m.Channel
	if channel == "" {
		channel = bundleChannel
	}
	venue, err := ParseVenue(channel)
	if err != nil {
		mr.Verdict, mr.Reason = Unverifiable, ReasonNoVenue
		return mr
	}
	edit := string(m.ReplacesMsgID)
	if edit == "" {
		edit = m.Tags[TagDraftEdit]
	}
	doc := Message{
		Envelope: Envelope{From: from, MsgID: m.MsgID, Venue: venue},
		Body:     m.Text,
		Reply:    ReplyFromTags(m.Tags),
		Edit:     edit,
		Tags:     m.Tags,
	}
	mr.Verdict, mr.Reason = VerifyDocument(doc, tagValue, lookup)
	return mr
}
