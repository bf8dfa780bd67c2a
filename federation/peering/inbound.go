package peering

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/federation/exchange"
	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/stream"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// batchPurpose is the domain prefix of what an envelope signature covers: the server key also
// signs message documents, evidence bundles and requests, and the prefix keeps a signature made
// for one of those from ever passing for a batch's (and the reverse).
const batchPurpose = "palaver federation batch v1\n"

// batchSigningInput is what an envelope's signature covers: the purpose prefix, then the payload.
func batchSigningInput(payload []byte) []byte {
	return append([]byte(batchPurpose), payload...)
}

// verifyBatchSignature checks an envelope signature over the prefixed payload, or, from a peer
// that does not prefix yet, over the payload alone. The unprefixed form is accepted for the
// transition only and is to be refused once every peer prefixes.
func verifyBatchSignature(pub ed25519.PublicKey, payload, sig []byte) bool {
	return ed25519.Verify(pub, batchSigningInput(payload), sig) || ed25519.Verify(pub, payload, sig)
}

// receive serves POST /federation/v1/events. It authenticates the sender from EnvelopeHeader
// before it reads anything of the body, then reads at most MaxEnvelopeBytes (the http.Server's
// ReadTimeout bounds how long that may take) and checks them against the signed digest.
// Refusals are the Error object with the federation's code (Refusal).
func (f *Federation) receive(c *gin.Context) {
	answer := func(status int, refusal *Refusal) {
		refusal.Documentation = requestOrigin(c.Request) + "/api/v1/openapi.json"
		if status == http.StatusUnauthorized {
			c.Header("WWW-Authenticate", EnvelopeHeader)
		}
		c.JSON(status, refusal)
	}
	auth, err := parseEnvelopeHeader(c.GetHeader(EnvelopeHeader))
	if err != nil {
		answer(http.StatusBadRequest, refusal(http.StatusBadRequest, CodeMalformed, err.Error()))
		return
	}
	status, refused := f.authenticate(c.Request.Context(), auth)
	if refused != nil {
		answer(status, refused)
		return
	}
	if c.Request.ContentLength > MaxEnvelopeBytes {
		answer(http.StatusRequestEntityTooLarge, refusal(http.StatusRequestEntityTooLarge, CodeMalformed,
			fmt.Sprintf("an envelope is at most %d bytes", MaxEnvelopeBytes)))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, MaxEnvelopeBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			answer(http.StatusRequestEntityTooLarge, refusal(http.StatusRequestEntityTooLarge, CodeMalformed,
				fmt.Sprintf("an envelope is at most %d bytes", MaxEnvelopeBytes)))
			return
		}
		answer(http.StatusBadRequest, refusal(http.StatusBadRequest, CodeMalformed, "reading the envelope: "+err.Error()))
		return
	}
	if !auth.matches(body) {
		f.metrics.count(auth.signer, "in", "refused", 1)
		answer(http.StatusUnauthorized, refusal(http.StatusUnauthorized, CodeBadSig, "the body is not the one the "+EnvelopeHeader+" header signed"))
		return
	}
	ack, status, refused := f.accept(c.Request.Context(), body, auth.signer)
	if refused != nil {
		answer(status, refused)
		return
	}
	c.JSON(http.StatusOK, ack)
}

// authenticate checks an EnvelopeHeader: a configured peer, a kid of its document, a signature
// that verifies.
func (f *Federation) authenticate(ctx context.Context, auth envelopeAuth) (int, *Refusal) {
	peer, ok := f.peers[auth.signer]
	if !ok {
		return http.StatusForbidden, refusal(http.StatusForbidden, CodeUnknownPeer, truncate(auth.signer, 80)+" is not a configured peer of this server")
	}
	pub, err := f.keys.lookup(ctx, peer, auth.tag.KID)
	if err != nil {
		f.metrics.count(peer.DID, "in", "refused", 1)
		return http.StatusUnauthorized, refusal(http.StatusUnauthorized, CodeBadKey, err.Error())
	}
	if !auth.verify(pub) {
		f.metrics.count(peer.DID, "in", "refused", 1)
		return http.StatusUnauthorized, refusal(http.StatusUnauthorized, CodeBadSig,
			"the "+EnvelopeHeader+" signature does not verify against "+peer.DID+"#"+auth.tag.KID)
	}
	return http.StatusOK, nil
}

// refusal builds a Refusal: the Error object with a federation code.
func refusal(status int, code, msg string) *Refusal {
	return &Refusal{Error: http.StatusText(status), Status: status, Message: msg, Code: code}
}

// requestOrigin is the origin a request was sent to.
func requestOrigin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// Accept checks and applies one envelope. On refusal it returns the HTTP status and the reason,
// and nothing was changed.
func (f *Federation) Accept(ctx context.Context, body []byte) (Ack, int, *Refusal) {
	return f.accept(ctx, body, "")
}

// accept is Accept for a sender already authenticated as signer ("" when none was): the
// envelope must then be that signer's.
func (f *Federation) accept(ctx context.Context, body []byte, signer string) (Ack, int, *Refusal) {
	refuse := func(status int, code, msg string) (Ack, int, *Refusal) {
		return Ack{}, status, refusal(status, code, msg)
	}
	env, payload, tag, err := ParseEnvelope(body)
	if err != nil {
		return refuse(http.StatusBadRequest, CodeMalformed, err.Error())
	}
	if signer != "" && env.Signer != signer {
		return refuse(http.StatusUnauthorized, CodeWrongRoute, "the envelope's signer is not the one the "+EnvelopeHeader+" header named")
	}
	peer, ok := f.peers[env.Signer]
	if !ok {
		return refuse(http.StatusForbidden, CodeUnknownPeer, truncate(env.Signer, 80)+" is not a configured peer of this server")
	}
	pub, err := f.keys.lookup(ctx, peer, tag.KID)
	if err != nil {
		f.metrics.keyRead.WithLabelValues(peer.DID, "miss").Inc()
		f.metrics.count(peer.DID, "in", "refused", 1)
		return refuse(http.StatusUnauthorized, CodeBadKey, err.Error())
	}
	f.metrics.keyRead.WithLabelValues(peer.DID, "hit").Inc()
	if !verifyBatchSignature(pub, payload, tag.Signature) {
		f.metrics.count(peer.DID, "in", "refused", 1)
		return refuse(http.StatusUnauthorized, CodeBadSig, "the envelope signature does not verify against "+peer.DID+"#"+tag.KID)
	}
	b, err := DecodeBatch(payload)
	if err != nil {
		return refuse(http.StatusBadRequest, CodeMalformed, err.Error())
	}
	if b.From != env.Signer || b.To != f.cfg.ServerDID {
		return refuse(http.StatusForbidden, CodeWrongRoute, "the batch must be from its signer and to "+f.cfg.ServerDID)
	}
	if d := f.cfg.Now().Sub(time.Unix(b.SentAt, 0)); d > maxClockSkew || d < -maxClockSkew {
		return refuse(http.StatusUnauthorized, CodeStale, "the envelope is stale or dated in the future")
	}
	if !peer.Trust.MayMessage() && b.Items() > 0 {
		f.metrics.count(peer.DID, "in", "refused", b.Items())
		return refuse(http.StatusForbidden, CodeNotAllowed, "a readonly peer may originate nothing")
	}

	lock := f.inbound[peer.DID]
	lock.Lock()
	defer lock.Unlock()
	seqKey := "fed-in:" + peer.DID + " " + tag.KID
	last, err := f.lastAccepted(ctx, seqKey)
	if err != nil {
		return refuse(http.StatusServiceUnavailable, CodeUnavailable, "the event store is unavailable")
	}
	if b.Seq <= last {
		f.metrics.count(peer.DID, "in", "refused", b.Items())
		r := refusal(http.StatusConflict, CodeOutOfOrder, "envelope out of order or replayed: its sequence must be greater than the last accepted")
		r.LastSeq = last
		return Ack{}, http.StatusConflict, r
	}
	if !f.limiter(peer.DID).AllowN(f.cfg.Now(), b.Items()) {
		f.metrics.count(peer.DID, "in", "rate-limited", b.Items())
		return refuse(http.StatusTooManyRequests, CodeRateLimited, "more than 100 events a second from this peer")
	}
	if err := f.keys.fileOnce(ctx, peer.DID, tag.KID, pub); err != nil {
		f.log.Warn("registering a peer server key", "peer", peer.DID, "kid", tag.KID, "err", err)
		return refuse(http.StatusServiceUnavailable, CodeUnavailable, "the peer's key could not be registered yet")
	}
	ack, err := f.apply(ctx, peer, b)
	if err != nil {
		f.log.Warn("applying a peer envelope", "peer", peer.DID, "err", err)
		return refuse(http.StatusServiceUnavailable, CodeUnavailable, "the envelope could not be applied; send it again")
	}
	if err := f.cfg.Store.SetCursor(ctx, seqKey, b.Seq); err != nil {
		return refuse(http.StatusServiceUnavailable, CodeUnavailable, "the event store is unavailable")
	}
	f.mu.Lock()
	f.lastSeq[seqKey] = b.Seq
	f.mu.Unlock()
	return ack, http.StatusOK, nil
}

func (f *Federation) lastAccepted(ctx context.Context, key string) (int64, error) {
	f.mu.Lock()
	last, ok := f.lastSeq[key]
	f.mu.Unlock()
	if ok {
		return last, nil
	}
	return f.cfg.Store.Cursor(ctx, key)
}

func (f *Federation) limiter(did string) interface {
	AllowN(time.Time, int) bool
} {
	return f.limiters[did]
}

// apply applies a verified batch in order: presence, changes and topics.
func (f *Federation) apply(ctx context.Context, peer Peer, b Batch) (Ack, error) {
	ack := Ack{OK: true}
	for _, p := range b.Presence {
		outcome, err := f.guarded(peer, "presence", func() (outcome, error) { return f.applyPresence(ctx, peer, p) })
		if err != nil {
			return ack, err
		}
		f.tally(peer, outcome, !kept(outcome), "presence", "kind", truncate(p.Kind, 10))
	}
	if b.WantPresence {
		if o := f.outboxes[peer.DID]; o != nil {
			o.mu.Lock()
			o.synced = false
			o.epoch++
			o.mu.Unlock()
			o.kick()
		}
	}
	for _, c := range b.Changes {
		o := outcomeNotAllowed // state changes from a peer not trusted "full" are dropped
		if peer.Trust.MayChangeState() {
			var err error
			if o, err = f.guarded(peer, "a channel change", func() (outcome, error) { return f.applyChange(ctx, peer, c) }); err != nil {
				return ack, err
			}
		}
		f.tally(peer, o, !kept(o), "a channel change", "channel", truncate(c.Channel, 60), "kind", truncate(c.Kind, 10))
		if !kept(o) {
			ack.refuse(f.IsHome(peer.DID) || c.Kind == ChangeKick || c.Kind == ChangeInvite, c.RequestID, o)
		}
	}
	for _, t := range b.Topics {
		o := outcomeNotAllowed // state changes from a peer not trusted "full" are dropped
		if peer.Trust.MayChangeState() {
			var err error
			if o, err = f.guarded(peer, "a topic", func() (outcome, error) { return f.applyTopic(ctx, peer, t) }); err != nil {
				return ack, err
			}
		}
		f.tally(peer, o, o != outcomeStored, "a topic", "channel", truncate(t.Channel, 60))
		if o != outcomeStored {
			ack.refuse(f.IsHome(peer.DID), t.RequestID, o)
		}
	}
	return ack, nil
}

// applyItems applies what a peer originated, as one frame of its stream carried it, in order: its
// messages and edits, its deletes, its reactions. Per item peering's checks (its link or DM,
// impostors, signatures, sanitising, the peer's trust), then the inbound pipeline. An event or
// delete that must wait (its root is not stored yet) stops its list there; Taken says how many of
// each list were taken (stored, or dropped as a duplicate or a lie). A reaction never waits: one
// whose root is not here is dropped.
func (f *Federation) applyItems(ctx context.Context, peer Peer, fr exchange.ServerFrame) (exchange.Taken, error) {
	var taken exchange.Taken
	for _, ev := range fr.Events {
		outcome, err := f.guarded(peer, "an event", func() (outcome, error) { return f.applyEvent(ctx, peer, ev) })
		if err != nil {
			return taken, err
		}
		if outcome == outcomeWait {
			break
		}
		f.tally(peer, outcome, !kept(outcome), "an event", "msgid", truncate(ev.MsgID, 40))
		taken.Events++
	}
	for _, d := range fr.Deletions {
		outcome, err := f.guarded(peer, "a delete", func() (outcome, error) { return f.applyDeletion(ctx, peer, d) })
		if err != nil {
			return taken, err
		}
		if outcome == outcomeWait {
			break
		}
		f.tally(peer, outcome, !kept(outcome), "a delete", "root", truncate(d.RootMsgID, 40))
		taken.Deletions++
	}
	for _, r := range fr.Reactions {
		outcome, err := f.guarded(peer, "a reaction", func() (outcome, error) { return f.applyReaction(ctx, peer, r) })
		if err != nil {
			return taken, err
		}
		f.tally(peer, outcome, outcome != outcomeStored, "a reaction", "event", truncate(r.EventID, 40))
		taken.Reactions++
	}
	return taken, nil
}

// kept says whether an item was taken (stored now, or already).
func kept(o outcome) bool { return o == outcomeStored || o == outcomeDuplicate }

// tally counts an inbound item's outcome and logs it when it was dropped, naming what it was.
func (f *Federation) tally(peer Peer, o outcome, dropped bool, what string, attrs ...any) {
	f.metrics.count(peer.DID, "in", string(o), 1)
	if dropped {
		f.log.Info("dropped "+what+" from a peer", append([]any{"peer", peer.DID, "why", string(o)}, attrs...)...)
	}
}

// refuse tells the asker that its request was refused (requests reach only the home, except
// kicks and invites, which reach the target's server).
func (a *Ack) refuse(home bool, requestID string, why outcome) {
	if !home || requestID == "" || len(a.Refused) >= MaxBatchItems {
		return
	}
	if a.Refused == nil {
		a.Refused = map[string]string{}
	}
	a.Refused[truncate(requestID, 40)] = string(why)
}

// outcome is what became of one item from a peer.
type outcome string

const (
	outcomeStored     outcome = "stored"
	outcomeDuplicate  outcome = "duplicate"
	outcomeWait       outcome = "wait"
	outcomeMalformed  outcome = "malformed"
	outcomeNotLinked  outcome = "not-linked"
	outcomeImpostor   outcome = "impostor"          // claims a local user or this server
	outcomeInvalidSig outcome = "invalid-signature" // a relayed signature that does not verify
	outcomeUnsigned   outcome = "unauthorised"      // a mutation without the author's valid signature
	outcomeNotAuthor  outcome = "not-author"
	outcomeNotOp      outcome = "not-op"
	outcomeNotAllowed outcome = "not-allowed" // beyond the peer's trust level
	outcomeNoRoot     outcome = "no-root"     // a reaction to a message not held here
	outcomeBanned     outcome = "banned"      // a join the channel's bans refuse
	outcomeNoTarget   outcome = "no-target"   // a kick or invite of no user of this server
)

// applyEvent checks and stores one message or edit.
func (f *Federation) applyEvent(ctx context.Context, peer Peer, ev exchange.Event) (outcome, error) {
	m, why := f.inboundMessage(peer, ev)
	if why != "" {
		return why, nil
	}
	sig := checkSignature(ctx, f, peer, m.Command, m.SenderDID, m.MsgID, m.Venue, m.Text, m.Tags)
	if sig.verdict == verdictInvalid {
		return outcomeInvalidSig, nil
	}
	m.Tags[TagOrigin] = originName(peer.DID)
	res, err := f.pipe.Receive(ctx, f.source(peer, func(root eventstore.Message) chat.Outcome {
		if !sig.authorizes(root, peer) {
			return chat.Unsigned
		}
		return chat.Accepted
	}), chat.Batch{Messages: []*eventstore.Message{m}})
	if err != nil {
		return "", err
	}
	return outcome(res.Messages[0]), nil
}

// source is a peer as the inbound pipeline sees it: its events are checked against this node's
// operators and against signature, the check an item's own signature verdict makes.
func (f *Federation) source(peer Peer, signature func(root eventstore.Message) chat.Outcome) exchange.Source {
	auth := &chat.Authority{IsOp: f.isDIDOp, Signature: signature}
	return exchange.Source{Peer: peer.Member(), Source: chat.Source{Kind: stream.Federation,
		Authority: func(stream.Item) *chat.Authority { return auth }}}
}

// inboundMessage validates and sanitises an event into the message this node stores.
func (f *Federation) inboundMessage(peer Peer, ev exchange.Event) (*eventstore.Message, outcome) {
	if !validMsgID(ev.MsgID) || (ev.ReplacesMsgID != "" && !validMsgID(ev.ReplacesMsgID)) || ev.ReplacesMsgID == ev.MsgID {
		return nil, outcomeMalformed
	}
	if ev.Command != "PRIVMSG" && ev.Command != "NOTICE" {
		return nil, outcomeMalformed
	}
	if ev.TimeMS <= 0 || len(ev.Tags) > maxTags || ev.SenderNick == "" {
		return nil, outcomeMalformed
	}
	if ev.SenderDID != "" && !validDID(ev.SenderDID) {
		return nil, outcomeMalformed
	}
	if isDMVenue(ev.Venue) {
		if why := f.inboundDM(ev.Venue, ev.SenderDID); why != "" {
			return nil, why
		}
	} else if !f.Linked(peer.DID, ev.Venue) || fsm.Fold(ev.Venue) != ev.Venue {
		return nil, outcomeNotLinked
	}
	nick := sanitizeName(ev.SenderNick)
	if f.ownedLocally(ev.SenderDID, nick) {
		return nil, outcomeImpostor
	}
	at := time.UnixMilli(ev.TimeMS)
	if now := f.cfg.Now(); at.After(now.Add(2 * time.Minute)) {
		at = now // a peer's clock may not put its messages after ours
	}
	sender := remotePrefix(peer, nick, sanitizeName(ev.Sender))
	return &eventstore.Message{
		MsgID: ev.MsgID, Venue: ev.Venue, Command: ev.Command, Sender: sender, SenderNick: nick,
		SenderDID: ev.SenderDID, Text: sanitize(ev.Text, maxTextBytes), Tags: sanitizeTags(ev.Tags), Time: at,
		ReplacesMsgID: ev.ReplacesMsgID, Origin: f.cfg.NodeName,
	}, ""
}

// applyDeletion checks and applies one delete. The delete event's own msgid, which its signature
// covers, is among the tags the origin filed it with (deletionEventIDTag).
func (f *Federation) applyDeletion(ctx context.Context, peer Peer, d eventstore.Deletion) (outcome, error) {
	eventID := d.Tags[deletionEventIDTag]
	if !validMsgID(eventID) || !validMsgID(d.RootMsgID) || d.At.UnixMilli() <= 0 || d.SenderDID == "" || !validDID(d.SenderDID) || len(d.Tags) > maxTags+1 {
		return outcomeMalformed, nil
	}
	if isDMVenue(d.Venue) {
		if why := f.inboundDM(d.Venue, d.SenderDID); why != "" {
			return why, nil
		}
	} else if !f.Linked(peer.DID, d.Venue) {
		return outcomeNotLinked, nil
	}
	deleter := sanitizeName(d.Sender)
	deleterNick, _, _ := strings.Cut(deleter, "!")
	if f.ownedLocally(d.SenderDID, deleterNick) {
		return outcomeImpostor, nil
	}
	signed := sanitizeTags(d.Tags) // the tags the deleter signed (deletionEventIDTag is not one)
	at := d.At
	if now := f.cfg.Now(); at.After(now) {
		at = now
	}
	if deleterNick != "" {
		deleter = remotePrefix(peer, deleterNick, deleter)
	}
	tags := maps.Clone(signed)
	tags[TagOrigin] = originName(peer.DID)
	tags[deletionEventIDTag] = eventID
	// Filed in this node's deletions log (Origin: this node), so the rest of the cluster copies it.
	del := eventstore.Deletion{RootMsgID: d.RootMsgID, At: at, Origin: f.cfg.NodeName, Venue: d.Venue,
		Deleter: eventstore.Deleter{Sender: deleter, SenderDID: d.SenderDID, Tags: tags}}
	res, err := f.pipe.Receive(ctx, f.source(peer, func(root eventstore.Message) chat.Outcome {
		sig := checkSignature(ctx, f, peer, "TAGMSG", d.SenderDID, eventID, d.Venue, "", signed)
		switch {
		case sig.verdict == verdictInvalid:
			return chat.Outcome(outcomeInvalidSig)
		case !sig.authorizes(root, peer):
			return chat.Unsigned
		}
		return chat.Accepted
	}), chat.Batch{Deletions: []eventstore.Deletion{del}})
	if err != nil {
		return "", err
	}
	return outcome(res.Deletions[0]), nil
}

// deletionEventIDTag is where a filed delete keeps its event's msgid (gateway/irc's
// DeletionEventIDTag; federation does not import the IRC edge).
const deletionEventIDTag = "msgid"

// ownedLocally reports whether a DID or nick belongs to this server, online or not: this server's
// identity, a DID with a session here, a nick owned here, a key this cluster's sessions or nodes
// registered; a nick in use by a session here or owned by a DID here, or one that looks like such
// a nick (package confusable). A peer never speaks as one.
func (f *Federation) ownedLocally(did, nick string) bool {
	if did == f.cfg.ServerDID {
		return true
	}
	owned := false
	f.cfg.State.Read(func(st *fsm.State) {
		if did != "" {
			if len(st.SessionsByDID(did)) > 0 || st.OwnedNick(did) != "" {
				owned = true
				return
			}
			for _, k := range st.KeysOf(did) {
				if k.Source() == "server-key" || k.Source() == "local-session" {
					owned = true
					return
				}
			}
		}
		if nick != "" && (st.NickInUse(nick) || st.NickOwner(fsm.Fold(nick)) != "") {
			owned = true
			return
		}
		if nick != "" {
			_, owned = f.lookalikes.LookAlike(st, nick, nil)
		}
	})
	return owned
}

// remotePrefix is the nick!user@host this server shows for a peer's user: the user part taken
// from the peer's prefix when it names nick (sanitised, else "~remote"), the host always the
// peer's server name, so that a peer cannot make its users look like this server's.
func remotePrefix(peer Peer, nick, sender string) string {
	user := ""
	if rest, ok := strings.CutPrefix(sender, nick+"!"); ok {
		user, _, _ = strings.Cut(rest, "@")
	}
	m, ok := remoteMember(peer, nick, user, "")
	if !ok {
		return nick + "!~remote@" + originName(peer.DID)
	}
	return m.Nick + "!" + m.User + "@" + m.Host
}

// isDIDOp reports whether did is an operator of channel in local state (founder or DID op).
func (f *Federation) isDIDOp(channel, did string) bool {
	op := false
	f.cfg.State.Read(func(st *fsm.State) {
		if ch, ok := st.Channel(channel); ok && did != "" {
			op = ch.FounderDID() == did || ch.IsDIDOp(did)
		}
	})
	return op
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
