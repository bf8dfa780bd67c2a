package signingapi

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/raft/fsm"
)

const howToVerify = "Rebuild canonical_form from the message (RFC 8785 JCS of {from, msgid, target, body: sha256 of the text, " +
	"and reply/edit/coord when present}), fetch the key named by the kid in the signature from " +
	"/api/v1/signing-keys/{did}/{kid}, and check the ed25519 signature over the canonical bytes."

// verdict is the outcome of checking one stored message.
type verdict struct {
	valid      bool
	verifiedBy string
	proves     string
	keySource  string // "" when no key was found
	key        *fsm.KeyRecord
	keyDID     string
	// keyLookup is set when the verdict depended on looking up kid (see verifyAnswer).
	keyLookup bool
	kid       string
}

func (v verdict) word() string {
	if v.valid {
		return "valid"
	}
	return "invalid"
}

func (v verdict) meaning() string {
	switch {
	case v.proves == "authorship":
		return "The sender's own registered key signed this exact message: it was written by that DID."
	case v.proves == "relay":
		return "The server that relayed this message signed it; it was not signed by the sender's own key, so it proves the relay, not the author."
	case v.verifiedBy == "key-retired":
		return "The key that signed this message had been retired or had expired before the message was made."
	case v.verifiedBy == "unsigned":
		return "The message carries no signature; nothing can be concluded about who wrote it."
	case strings.HasPrefix(v.verifiedBy, "unverifiable"):
		return "The signature could not be checked (" + v.verifiedBy + "); nothing can be concluded."
	}
	return "The signature does not match the message and the key it names: the message or its signature was altered."
}

// check classifies a stored message's signature (freeq-reference §2.7 with the contract's verdicts).
func (a *API) check(m eventstore.Message) (v verdict, canonical []byte) {
	sig := signing.SigFromTags(m.Tags)
	if sig == "" {
		return verdict{verifiedBy: "unsigned", proves: "nothing"}, nil
	}
	canonical, problem := canonicalOf(m, m.MsgID)
	if problem != "" {
		return verdict{verifiedBy: problem, proves: "nothing"}, nil
	}
	tag, err := signing.ParseSigTag(sig)
	switch {
	case errors.Is(err, signing.ErrUnknownAlgorithm):
		return verdict{verifiedBy: "unverifiable-unknown-algorithm", proves: "nothing"}, canonical
	case errors.Is(err, signing.ErrLegacyFormat):
		return verdict{verifiedBy: "unverifiable-legacy-format", proves: "nothing"}, canonical
	case err != nil:
		return verdict{verifiedBy: "unverifiable-unusable-signature", proves: "nothing"}, canonical
	}
	key, keyDID := a.findKey(m.SenderDID, tag.KID)
	if key == nil {
		return verdict{verifiedBy: "unverifiable-unknown-key", proves: "nothing", keyLookup: true, kid: tag.KID}, canonical
	}
	// A server key of this deployment's nodes or of a peer server (filed from its did:web document
	// with source origin-server) vouches for the relay, not the author; a user's key a peer
	// relayed (filed under the user's DID, source origin-server) proves authorship. key_source
	// tells the two servers apart (see the package doc).
	serverKey := key.Source == "server-key" || (key.Source == "origin-server" && keyDID != m.SenderDID)
	v = verdict{key: key, keyDID: keyDID, keySource: key.Source, verifiedBy: "client-session-key", keyLookup: true, kid: tag.KID}
	if serverKey {
		v.verifiedBy = "server-key"
	}
	if v.keySource == "" {
		v.keySource = "unknown"
	}
	if end := key.EndedAt(); end != 0 && !serverKey {
		if id, err := ulid.ParseStrict(m.MsgID); err == nil && int64(id.Time()/1000) >= end {
			v.verifiedBy, v.proves = "key-retired", "nothing"
			return v, canonical
		}
	}
	result, _ := a.verified.Verify(canonical, sig, func(kid string) (ed25519.PublicKey, bool) {
		return ed25519.PublicKey(key.PublicKey), kid == key.KID
	})
	switch result {
	case signing.Valid:
		v.valid = true
		v.proves = "authorship"
		if serverKey {
			v.proves = "relay"
		}
	case signing.Invalid:
		v.proves = "nothing"
	default:
		v.verifiedBy, v.proves = "unverifiable-unusable-signature", "nothing"
	}
	return v, canonical
}

// canonicalOf rebuilds the document a stored message's signature covers, under msgid (the
// revision's for an edited message), and returns its canonical bytes or why it cannot.
func canonicalOf(m eventstore.Message, msgid string) ([]byte, string) {
	if m.SenderDID == "" {
		return nil, "unverifiable-unknown-sender"
	}
	venue, err := signing.ParseVenue(m.Venue)
	if err != nil {
		return nil, "unverifiable-no-venue"
	}
	doc, err := signing.DocumentFromTags(m.Command, signing.Envelope{From: m.SenderDID, MsgID: msgid, Venue: venue}, m.Text, m.Tags)
	if err != nil {
		return nil, "unverifiable-no-document"
	}
	canonical, err := doc.Canonical()
	if err != nil {
		return nil, "unverifiable-no-document"
	}
	return canonical, ""
}

// findKey finds the key a kid names: one filed under the sender's DID, or a server key of any
// node of this deployment (reported under the deployment's DID, where the signing-keys routes
// list it) or of a peer server.
func (a *API) findKey(senderDID, kid string) (*fsm.KeyRecord, string) {
	var rec *fsm.KeyRecord
	var did string
	a.cfg.State.Read(func(st *fsm.State) {
		if k, ok := st.Key(senderDID, kid); ok {
			kc := k.Record()
			rec, did = &kc, senderDID
			return
		}
		for d, k := range st.AllKeys() {
			if k.KID() == kid && (k.Source() == "server-key" || k.Source() == "origin-server") {
				kc := k.Record()
				rec, did = &kc, d
				return
			}
		}
	})
	if rec != nil && rec.Source == "server-key" {
		did = a.ServerDID()
	}
	return rec, did
}

// verify serves GET /api/v1/verify/{msgid}, from the answer cache when the key it was built with
// is still the one the signature names.
func (a *API) verify(c *gin.Context) {
	msgid := c.Param("msgid")
	if _, err := ulid.ParseStrict(msgid); err != nil {
		rest.WriteError(c, http.StatusNotFound, "Message "+truncate(msgid, 40)+" not found")
		return
	}
	if cached := a.answers.get(msgid); cached != nil {
		if status, msg := a.readable(cached.venue, cached.incarnation, cached.public, rest.DID(c)); status != 0 {
			rest.WriteError(c, status, msg)
			return
		}
		var key *fsm.KeyRecord
		var keyDID string
		if cached.keyLookup {
			key, keyDID = a.findKey(cached.senderDID, cached.kid)
		}
		if cached.stillHolds(key, keyDID) {
			c.Data(http.StatusOK, jsonContentType, cached.body)
			return
		}
	}
	m, err := a.cfg.Messages.Get(c.Request.Context(), msgid)
	if errors.Is(err, eventstore.ErrNotFound) {
		rest.WriteError(c, http.StatusNotFound, "Message "+msgid+" not found")
		return
	}
	if err != nil {
		rest.WriteError(c, http.StatusServiceUnavailable, "the message store is unavailable")
		return
	}
	if status, msg := a.readable(m.Venue, m.Incarnation, m.Public, rest.DID(c)); status != 0 {
		rest.WriteError(c, status, msg)
		return
	}
	v, canonical := a.check(m)
	verification := gin.H{
		"valid": v.valid, "verdict": v.word(), "verified_by": v.verifiedBy, "proves": v.proves,
		"meaning": v.meaning(), "server_public_key": signing.EncodePublicKey(a.pub), "client_public_key": nil,
	}
	out := gin.H{
		"msgid": m.MsgID, "channel": m.Venue, "from": m.SenderNick, "text": m.Text, "timestamp": m.Time.Unix(),
		"sender_did": nullIfEmpty(m.SenderDID), "signature": nullIfEmpty(signing.SigFromTags(m.Tags)),
		"replaces_msgid": nullIfEmpty(m.ReplacesMsgID),
		"verdict":        v.word(), "verified_by": v.verifiedBy, "verification": verification,
		"how_to_verify": howToVerify, "canonical_form": nil, "canonical_hex": nil,
	}
	if canonical != nil {
		out["canonical_form"], out["canonical_hex"] = string(canonical), hex.EncodeToString(canonical)
	}
	if v.key != nil {
		pk := signing.EncodePublicKey(v.key.PublicKey)
		if v.keySource != "server-key" && v.keySource != "origin-server" {
			verification["client_public_key"] = pk
		}
		verification["key_source"], out["key_source"] = v.keySource, v.keySource
		out["signing_key"] = toJSON(v.keyDID, v.key, true)
	}
	body, err := json.Marshal(out) // as c.JSON encodes it
	if err != nil {
		a.cfg.Logger.ErrorContext(c.Request.Context(), "encoding a verify answer failed", "msgid", msgid, "err", err)
		rest.WriteError(c, http.StatusInternalServerError, "The answer could not be encoded")
		return
	}
	a.answers.put(msgid, &verifyAnswer{venue: m.Venue, incarnation: m.Incarnation, public: m.Public, keyLookup: v.keyLookup, senderDID: m.SenderDID, kid: v.kid,
		keyDID: v.keyDID, key: v.key, body: body})
	c.Data(http.StatusOK, jsonContentType, body)
}

// jsonContentType is what c.JSON sends.
const jsonContentType = "application/json; charset=utf-8"

// readable applies channel read authorization to a message written in venue during incarnation
// inc (public when written): 0 when the reader may see it. A message its channel no longer shows
// (the channel is gone, or it is a restricted message of an earlier channel of that name) is not
// found; a refusal never names the channel.
func (a *API) readable(venue, inc string, public bool, did string) (int, string) {
	if strings.HasPrefix(venue, "dm:") {
		return http.StatusForbidden, "Direct messages are not readable over the REST API"
	}
	status, msg := http.StatusNotFound, "Message not found"
	a.cfg.State.Read(func(st *fsm.State) {
		ch, _ := st.Channel(venue)
		switch {
		case !ch.MessageVisible(inc, public):
		case st.MayRead(ch, did):
			status, msg = 0, ""
		default:
			status, msg = http.StatusForbidden, "The message is in a restricted channel: present a bearer token of a member"
		}
	})
	return status, msg
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
