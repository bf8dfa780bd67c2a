package irc

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"strconv"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// Signatures on arrival (freeq-reference §2.3–2.5): a client may register a session key with
// MSGSIG and sign its messages with +freeq.at/sig; the chat service (node/chat) keeps a signature
// that verifies (the connection's session key is handed to it with each event), refuses an
// invalid one and signs the rest with the server key. The edge registers keys and ends the
// sessions whose key expired or was retired.

const tagSig = chat.TagSig

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
			if k, ok := st.Key(did, t.kid); ok && k.ExpiresAt() != 0 && now.Unix() >= k.ExpiresAt() {
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
