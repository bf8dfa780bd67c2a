package irc

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/federation/signing"
	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// Signatures on arrival (freeq-reference §2.3–2.5): a client may register a session key with
// MSGSIG and sign its messages with +freeq.at/sig; a signature that verifies is relayed byte for
// byte, an invalid one is refused, and anything else is signed by this node's server key over the
// same canonical document. Guests' messages go unsigned. Edits, deletes and reactions by
// authenticated users need their own valid signature. A client may choose the msgid it signs with
// +freeq.at/eventid.

const (
	tagSig     = "+freeq.at/sig"
	tagEventID = "+freeq.at/eventid"
	maxSkew    = 120 * time.Second
)

func handleMSGSIG(c *client, m ircmsg.Message, rb *respBuf) {
	if !c.registered.Load() {
		return // silently ignored before registration
	}
	did := c.currentDID()
	if did == "" {
		rb.add(c.failMsg("MSGSIG", "NOT_AUTHENTICATED", "Must be DID-authenticated to register a signing key"))
		return
	}
	raw, err := base64.RawURLEncoding.DecodeString(m.Param(0))
	if err != nil || len(raw) != ed25519.PublicKeySize {
		rb.add(c.failMsg("MSGSIG", "INVALID_KEY", "Expected 32-byte base64url-encoded ed25519 public key"))
		return
	}
	if !keyresolver.ValidEd25519Point(raw) {
		rb.add(c.failMsg("MSGSIG", "INVALID_KEY", "Invalid ed25519 public key"))
		return
	}
	pub := ed25519.PublicKey(raw)
	kid := signing.KID(pub)
	var expires int64
	if c.s.cfg.KeyLifetime > 0 {
		expires = time.Now().Add(c.s.cfg.KeyLifetime).Unix()
	}
	res, err := c.propose(fsm.RegisterKey{DID: did, KID: kid, PublicKey: raw, Source: "local-session",
		Purpose: "msgsig", ExpiresAt: expires, Session: c.id})
	if err != nil {
		rb.add(c.failMsg("MSGSIG", "TEMPORARILY_UNAVAILABLE", "The key could not be registered; try again"))
		return
	}
	switch res.Code {
	case fsm.OK, fsm.NoChange:
		c.sigMu.Lock()
		c.sessionKey, c.sessionKID = pub, kid
		c.sigMu.Unlock()
		rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: "MSGSIG", Params: []string{"OK"}})
	case fsm.ErrKeyEnded:
		rb.add(c.failMsg("MSGSIG", "KEY_EXPIRED", "That key was retired or has expired; register a new one"))
	case fsm.ErrTooManyKeys:
		rb.add(c.failMsg("MSGSIG", "TOO_MANY_KEYS", "Every one of your session keys is in use (at most "+strconv.Itoa(fsm.MaxSessionKeysPerDID)+"); end a session first"))
	default:
		rb.add(c.failMsg("MSGSIG", "INVALID_KEY", "The key could not be registered"))
	}
}

// adoptEventID applies +freeq.at/eventid: the client chose the msgid it signed. It returns the
// msgid to use, or "" after answering a refusal.
func (c *client) adoptEventID(rb *respBuf, cmd string, tags map[string]string, now time.Time) (string, bool) {
	id, ok := tags[tagEventID]
	if !ok {
		return c.s.newMsgID(now), true
	}
	delete(tags, tagEventID)
	failCmd := cmd
	if _, edit := tags["+draft/edit"]; edit {
		failCmd = "EDIT"
	}
	if c.currentDID() == "" {
		rb.add(c.failMsg(failCmd, "EVENTID_NOT_AUTHENTICATED", "Only authenticated users may choose event ids"))
		return "", false
	}
	parsed, err := ulid.ParseStrict(id)
	if err != nil || len(id) != ulid.EncodedSize || strings.ToUpper(id) != id {
		rb.add(c.failMsg(failCmd, "INVALID_EVENTID", "Event ids are 26 characters of uppercase Crockford base32"))
		return "", false
	}
	if d := now.Sub(ulid.Time(parsed.Time())); d > maxSkew || d < -maxSkew {
		rb.add(c.failMsg(failCmd, "EVENTID_CLOCK_SKEW", "The event id's time is more than 120 seconds from the server's"))
		return "", false
	}
	// A msgid already stored is refused when the message is stored (EVENTID_IN_USE): the store's
	// unique index decides, without a lookup first.
	return id, true
}

// lookupKey finds the key a kid names for this client's DID: its session key, the key embedded in
// a did:key DID, or a live key filed in the replicated registry.
func (c *client) lookupKey(did string) signing.KeyLookup {
	return func(kid string) (ed25519.PublicKey, bool) {
		c.sigMu.Lock()
		pub, sessionKID := c.sessionKey, c.sessionKID
		c.sigMu.Unlock()
		if pub != nil && kid == sessionKID {
			return pub, true
		}
		if strings.HasPrefix(did, "did:key:") {
			if k, err := keyresolver.ParseDIDKey(did); err == nil && k.Type == keyresolver.Ed25519 {
				if signing.KID(k.Raw) == kid {
					return ed25519.PublicKey(k.Raw), true
				}
			}
		}
		var found ed25519.PublicKey
		now := time.Now().Unix()
		c.s.state.Read(func(st *fsm.State) {
			if k := st.Key(did, kid); k != nil && k.Live(now) {
				found = append(ed25519.PublicKey(nil), k.PublicKey...)
			}
		})
		return found, found != nil
	}
}

// sign settles the signature of an outgoing message: it keeps a client signature that verifies,
// refuses an invalid one, requires one on mutations by authenticated users, and otherwise signs
// with the server key. tags is modified in place. It reports false after answering a refusal.
func (c *client) sign(rb *respBuf, cmd string, venue signing.Venue, msgid, text string, tags map[string]string) bool {
	if v, ok := tags["freeq.at/sig"]; ok { // accepted without the + too
		delete(tags, "freeq.at/sig")
		if _, has := tags[tagSig]; !has {
			tags[tagSig] = v
		}
	}
	did := c.currentDID()
	clientSig, hasSig := tags[tagSig]
	delete(tags, tagSig)
	if did == "" || venue.IsZero() {
		return true // guests and venues that do not resolve go unsigned
	}
	doc, err := signing.DocumentFromTags(cmd, signing.Envelope{From: did, MsgID: msgid, Venue: venue}, text, tags)
	if errors.Is(err, signing.ErrNotSignable) {
		return true
	}
	failCmd := cmd
	if _, edit := tags["+draft/edit"]; edit {
		failCmd = "EDIT"
	}
	if err != nil {
		rb.add(c.failMsg(failCmd, "INVALID_EVENT", "The event cannot be signed: "+err.Error()))
		return false
	}
	canonical, err := doc.Canonical()
	if err != nil {
		rb.add(c.failMsg(failCmd, "INVALID_EVENT", "The event cannot be signed: "+err.Error()))
		return false
	}
	if hasSig {
		switch verdict, _ := signing.Verify(canonical, clientSig, c.lookupKey(did)); verdict {
		case signing.Valid:
			tags[tagSig] = clientSig
			return true
		case signing.Invalid:
			rb.add(c.failMsg(failCmd, "SIGNATURE_INVALID", "That signature does not verify against the key it names"))
			return false
		}
	}
	if chat.IsMutation(cmd, tags) {
		rb.add(c.failMsg(failCmd, "SIGNATURE_REQUIRED", "A signed request is required to modify messages on this server"))
		return false
	}
	if c.s.cfg.ServerKey != nil {
		tags[tagSig] = signing.Sign(c.s.cfg.ServerKey, canonical)
	}
	return true
}

// sweepKeys runs until the server closes, ending local sessions whose MSGSIG key expired.
func (s *Server) sweepKeys(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-t.C:
			s.endExpiredKeySessions(now)
		}
	}
}

// endExpiredKeySessions closes every local session signing with a key past its expiry; its bearer
// token dies with it.
func (s *Server) endExpiredKeySessions(now time.Time) int {
	type target struct {
		c   *client
		kid string
	}
	var candidates []target
	s.mu.RLock()
	for _, c := range s.clients {
		c.sigMu.Lock()
		if c.sessionKID != "" {
			candidates = append(candidates, target{c, c.sessionKID})
		}
		c.sigMu.Unlock()
	}
	s.mu.RUnlock()
	ended := 0
	for _, t := range candidates {
		did := t.c.currentDID()
		expired := false
		s.state.Read(func(st *fsm.State) {
			if k := st.Key(did, t.kid); k != nil && k.ExpiresAt != 0 && now.Unix() >= k.ExpiresAt {
				expired = true
			}
		})
		if !expired {
			continue
		}
		fail := t.c.failMsg("MSGSIG", "KEY_EXPIRED", "Your signing key has expired; reconnect and register a new one")
		t.c.closeWith("Signing key expired", fail.AppendTo(nil), t.c.line("", "ERROR", "Signing key expired"))
		ended++
	}
	return ended
}

// RetireKey retires a key on its owner's request (POST /api/v1/devices/sign-out): the key is
// marked retired through Raft, and every session of that DID signing with it is ended, which
// revokes its bearer token. An unknown or already retired key changes nothing.
func (s *Server) RetireKey(ctx context.Context, did, kid string) (sessionsClosed, tokensRevoked int, err error) {
	res, err := s.proposer.Propose(ctx, fsm.RetireKey{DID: did, KID: kid})
	if err != nil {
		return 0, 0, err
	}
	if res.Code != fsm.OK {
		return 0, 0, nil
	}
	type victim struct {
		id    string
		token bool
	}
	var victims []victim
	s.state.Read(func(st *fsm.State) {
		for _, se := range st.SessionsByDID(did) {
			if se.SigningKID == kid {
				victims = append(victims, victim{se.ID, se.TokenHash != ""})
			}
		}
	})
	for _, v := range victims {
		// End the session in the replicated state first (its token dies with it), then close the
		// local connection; the connection's own teardown then finds the session already gone.
		r, err := s.proposer.Propose(ctx, fsm.EndSession{Session: v.id, Reason: "Signing key retired"})
		if err != nil {
			return sessionsClosed, tokensRevoked, err
		}
		if c := s.localClient(v.id); c != nil {
			fail := c.failMsg("MSGSIG", "KEY_RETIRED", "Your signing key was retired by its owner")
			c.closeWith("Signing key retired", fail.AppendTo(nil), c.line("", "ERROR", "Signing key retired"))
		}
		if r.Code == fsm.OK {
			sessionsClosed++
			if v.token {
				tokensRevoked++
			}
		}
	}
	return sessionsClosed, tokensRevoked, nil
}
