package chat

import (
	"context"
	"crypto/ed25519"
	"errors"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// Signatures on arrival (freeq-reference §2.3–2.5): a sender may sign its event with
// +freeq.at/sig (a key it registered with MSGSIG, its did:key, or a key filed for its DID); a
// signature that verifies is kept byte for byte, an invalid one is refused, and anything else is
// signed by this node's server key over the same canonical document. Guests' events go unsigned.
// Edits, deletes and reactions by authenticated users need their own valid signature. An
// authenticated sender may choose the msgid it signs with +freeq.at/eventid.

const (
	// TagSig is the signature tag.
	TagSig = "+freeq.at/sig"
	// TagEventID is the tag by which a sender chooses its event's msgid.
	TagEventID = "+freeq.at/eventid"
	// MaxEventIDSkew is how far a chosen msgid's time may be from the server's.
	MaxEventIDSkew = 120 * time.Second
)

// Prepare checks a local sender's event and readies it for Commit, changing nothing: for a
// channel, the send rules (Check: 403, 404) and then d.Check; the msgid (its own
// +freeq.at/eventid, else a new one); for an edit or delete, its message (resolved to the root in
// the venue) and the authorship rule (the author, or for a delete a channel moderator); for a
// reaction, its message and the sender's membership (442); then the signature.
func (s *Service) Prepare(ctx context.Context, d Draft) (*Write, *Refusal) {
	channel := IsChannel(d.Venue)
	w := &Write{failCmd: d.Command}
	member := false
	if channel {
		v := Check(s.cfg.State, Request{Session: d.Session, DID: d.DID, Oper: d.Oper, Channel: d.Venue, Command: d.Command, Text: d.Text})
		switch {
		case !v.Exists:
			return nil, &Refusal{Command: d.Command, Numeric: "403", Context: []string{d.Venue}, Text: "No such channel"}
		case v.Refusal != "":
			return nil, &Refusal{Command: d.Command, Numeric: "404", Context: []string{d.Venue}, Text: v.Refusal}
		}
		w.Moderator = v.Moderator
		if d.Check != nil {
			if r := d.Check(); r != nil {
				return nil, r
			}
		}
		member = v.Member
	}
	tags := CopyTags(d.Tags)
	if _, edit := tags["+draft/edit"]; edit && d.Command != "TAGMSG" {
		w.failCmd = "EDIT"
	}
	now := s.cfg.Now()
	msgid, r := s.adoptEventID(d, w.failCmd, tags, now)
	if r != nil {
		return nil, r
	}
	if d.Status != "" && (tags["+draft/edit"] != "" || tags["+draft/delete"] != "" || tags["+draft/react"] != "") {
		return nil, fail(d.Command, "INVALID_TARGET", "Edits, deletes and reactions cannot target a status message", d.Status+d.Venue)
	}
	replaces, deletes, r := s.prepareMutation(ctx, d, tags, w.Moderator)
	if r != nil {
		return nil, r
	}
	var react *eventstore.ReactionEvent
	if channel {
		if react, r = s.prepareReaction(ctx, d, tags); r != nil {
			return nil, r
		}
		if react != nil && !member {
			return nil, &Refusal{Command: d.Command, Numeric: "442", Context: []string{d.Venue}, Text: "You're not on that channel"}
		}
	}
	var venue signing.Venue
	if channel {
		venue, _ = signing.ChannelVenue(d.Venue)
	} else if d.Venue != "" {
		venue, _ = signing.ParseVenue(d.Venue)
	}
	if r := s.sign(d, w.failCmd, venue, msgid, tags); r != nil {
		return nil, r
	}
	w.Event = eventstore.Message{MsgID: msgid, Venue: d.Venue, Command: d.Command, Sender: d.Mask,
		SenderNick: d.Nick, SenderDID: d.DID, Tags: tags, Time: now, Origin: s.cfg.NodeName,
		ReplacesMsgID: replaces, Status: d.Status}
	if d.Command != "TAGMSG" {
		w.Event.Text = d.Text
	}
	switch {
	case deletes != "":
		filed := CopyTags(tags)
		filed[DeletionEventIDTag] = msgid
		w.Kind = Deletion
		w.Deletion = &eventstore.Deletion{RootMsgID: deletes, At: now, Origin: s.cfg.NodeName, Venue: d.Venue,
			Deleter: eventstore.Deleter{Sender: d.Mask, SenderDID: d.DID, Tags: filed}}
	case react != nil:
		react.EventID, react.At, react.Tags = msgid, now, CopyTags(tags)
		w.Kind, w.Reaction = Reaction, react
	case d.Command == "TAGMSG" && d.Status == "" && d.Venue != "" && s.cfg.Store != nil && s.keeps(tags):
		w.Kind = Message // kept in history, an event for draft/event-playback readers
	case channel && (d.Status != "" || d.Command == "TAGMSG"):
		w.Kind = Relay
	case d.Venue != "" && d.Command != "TAGMSG" && s.cfg.Store != nil:
		w.Kind = Message
	}
	return w, nil
}

// adoptEventID applies +freeq.at/eventid (the sender chose the msgid it signed, which it removes
// from tags) or mints a msgid. A msgid already stored is refused by Commit (EVENTID_IN_USE): the
// store's unique index decides, without a lookup first.
func (s *Service) adoptEventID(d Draft, failCmd string, tags map[string]string, now time.Time) (string, *Refusal) {
	id, ok := tags[TagEventID]
	if !ok {
		return s.NewMsgID(now), nil
	}
	delete(tags, TagEventID)
	if d.DID == "" {
		return "", fail(failCmd, "EVENTID_NOT_AUTHENTICATED", "Only authenticated users may choose event ids")
	}
	parsed, err := ulid.ParseStrict(id)
	if err != nil || len(id) != ulid.EncodedSize || strings.ToUpper(id) != id {
		return "", fail(failCmd, "INVALID_EVENTID", "Event ids are 26 characters of uppercase Crockford base32")
	}
	if dt := now.Sub(ulid.Time(parsed.Time())); dt > MaxEventIDSkew || dt < -MaxEventIDSkew {
		return "", fail(failCmd, "EVENTID_CLOCK_SKEW", "The event id's time is more than 120 seconds from the server's")
	}
	return id, nil
}

// mutation is what a message asks to do to an earlier one.
type mutation struct {
	editOf   string // +draft/edit
	deleteOf string // +draft/delete or +delete
}

func mutationOf(cmd string, tags map[string]string) mutation {
	var mu mutation
	if cmd == "TAGMSG" {
		mu.deleteOf = tags["+draft/delete"]
		if mu.deleteOf == "" {
			mu.deleteOf = tags["+delete"]
		}
		return mu
	}
	mu.editOf = tags["+draft/edit"]
	return mu
}

// EditOrDeleteOf reports the message an event edits or deletes ("" for neither).
func EditOrDeleteOf(cmd string, tags map[string]string) string {
	mu := mutationOf(cmd, tags)
	return mu.editOf + mu.deleteOf
}

// resolveRoot finds the root of a referenced message in venue, or the refusal naming failCmd.
func (s *Service) resolveRoot(ctx context.Context, failCmd, venue, msgid string) (eventstore.Message, *Refusal) {
	if s.cfg.Store == nil {
		return eventstore.Message{}, fail(failCmd, "MESSAGE_NOT_FOUND", "Original message not found", msgid)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	root, err := s.cfg.Store.Root(ctx, msgid)
	if errors.Is(err, eventstore.ErrNotFound) || (err == nil && root.Venue != venue) {
		return eventstore.Message{}, fail(failCmd, "MESSAGE_NOT_FOUND", "Original message not found", msgid)
	}
	if err != nil {
		s.log.Error("resolve message", "msgid", msgid, "err", err)
		r := fail(failCmd, "TEMPORARILY_UNAVAILABLE", "History is unavailable", msgid)
		r.Err = err
		return eventstore.Message{}, r
	}
	return root, nil
}

// notAMessage refuses an edit or a reaction aimed at a kept TAGMSG: it has no text to replace or
// react to, and the readers of messages (REST, MCP, history without event-playback) do not show
// it, so it is answered as a message that is not there. A kept TAGMSG may still be deleted.
func notAMessage(failCmd, msgid string) *Refusal {
	return fail(failCmd, "MESSAGE_NOT_FOUND", "Original message not found", msgid)
}

// prepareMutation checks an edit or delete against its root and authorship and points the
// reference tag at the root. A signed event that names a revision is refused, never rewritten,
// because the signature covers the reference. It returns the root an edit replaces and the root a
// delete removes. A venue of "" (a DM between two guests) is never stored, so it is relayed as it is.
func (s *Service) prepareMutation(ctx context.Context, d Draft, tags map[string]string, mayModerate bool) (replaces, deletes string, r *Refusal) {
	mu := mutationOf(d.Command, tags)
	if d.Venue == "" || (mu.editOf == "" && mu.deleteOf == "") {
		return "", "", nil
	}
	_, signed := tags[TagSig]
	if !signed {
		_, signed = tags["freeq.at/sig"]
	}
	failCmd, ref := "EDIT", mu.editOf
	if mu.editOf == "" {
		failCmd, ref = "DELETE", mu.deleteOf
	}
	root, r := s.resolveRoot(ctx, failCmd, d.Venue, ref)
	if r != nil {
		return "", "", r
	}
	if signed && root.MsgID != ref {
		return "", "", fail(failCmd, "INVALID_REFERENCE", "Signed events must name the root message", ref)
	}
	if mu.editOf != "" {
		if root.Command == "TAGMSG" {
			return "", "", notAMessage("EDIT", ref)
		}
		if !root.DeletedAt.IsZero() {
			return "", "", &Refusal{Command: "EDIT"} // editing a deleted message is silently refused
		}
		if !IsAuthor(root, d.DID, d.Nick) {
			return "", "", fail("EDIT", "AUTHOR_MISMATCH", "Only the author can edit this message", ref)
		}
		tags["+draft/edit"] = root.MsgID
		return root.MsgID, "", nil
	}
	if !IsAuthor(root, d.DID, d.Nick) && !mayModerate {
		return "", "", fail("DELETE", "AUTHOR_MISMATCH", "Only the author or a channel operator can delete this message", ref)
	}
	delete(tags, "+delete")
	tags["+draft/delete"] = root.MsgID
	return "", root.MsgID, nil
}

// prepareReaction resolves a reaction's target to its root in the venue and points +reply at it:
// the reaction event to file (without its msgid and time yet), or nil for a TAGMSG that is no
// reaction. Reactions are filed by the root message, once per reactor and emoji.
func (s *Service) prepareReaction(ctx context.Context, d Draft, tags map[string]string) (*eventstore.ReactionEvent, *Refusal) {
	if !IsReaction(d.Command, tags) || d.Venue == "" {
		return nil, nil
	}
	emoji, remove := tags["+react"], false
	if emoji == "" {
		emoji = tags["+draft/react"]
	}
	if emoji == "" {
		if emoji = tags["+freeq.at/unreact"]; emoji == "" {
			return nil, nil
		}
		remove = true
	}
	if len(emoji) > eventstore.MaxEmojiBytes {
		return nil, fail("TAGMSG", "INVALID_REACTION", "That reaction is too long")
	}
	subject := signing.ReplyFromTags(tags)
	root, r := s.resolveRoot(ctx, "TAGMSG", d.Venue, subject)
	if r != nil {
		return nil, r
	}
	if root.Command == "TAGMSG" {
		return nil, notAMessage("TAGMSG", subject)
	}
	if _, signed := tags[TagSig]; signed && root.MsgID != subject {
		return nil, fail("TAGMSG", "INVALID_REFERENCE", "Signed events must name the root message", subject)
	}
	if _, ok := tags["+reply"]; ok {
		tags["+reply"] = root.MsgID
	} else {
		tags["+draft/reply"] = root.MsgID
	}
	reactor := d.DID
	if reactor == "" {
		reactor = "nick:" + d.Nick
	}
	return &eventstore.ReactionEvent{Origin: s.cfg.NodeName, Root: root.MsgID, Reactor: reactor, ReactorNick: d.Nick,
		Emoji: emoji, Remove: remove, Venue: d.Venue, Sender: d.Mask, SenderDID: d.DID}, nil
}

// lookupKey finds the key a kid names for a sender's DID: its session key, the key embedded in a
// did:key DID, or a live key filed in the replicated registry.
func (s *Service) lookupKey(d Draft) signing.KeyLookup {
	return func(kid string) (ed25519.PublicKey, bool) {
		if d.SessionKey != nil && kid == d.SessionKID {
			return d.SessionKey, true
		}
		if strings.HasPrefix(d.DID, "did:key:") {
			if k, err := keyresolver.ParseDIDKey(d.DID); err == nil && k.Type == keyresolver.Ed25519 {
				if signing.KID(k.Raw) == kid {
					return ed25519.PublicKey(k.Raw), true
				}
			}
		}
		var found ed25519.PublicKey
		now := s.cfg.Now().Unix()
		s.cfg.State.Read(func(st *fsm.State) {
			if k, ok := st.Key(d.DID, kid); ok && k.Live(now) {
				found = k.PublicKey()
			}
		})
		return found, found != nil
	}
}

// sign settles an event's signature: it keeps a sender's signature that verifies, refuses an
// invalid one, requires one on mutations by authenticated users, and otherwise signs with the
// server key. tags is modified in place.
func (s *Service) sign(d Draft, failCmd string, venue signing.Venue, msgid string, tags map[string]string) *Refusal {
	if v, ok := tags["freeq.at/sig"]; ok { // accepted without the + too
		delete(tags, "freeq.at/sig")
		if _, has := tags[TagSig]; !has {
			tags[TagSig] = v
		}
	}
	clientSig, hasSig := tags[TagSig]
	delete(tags, TagSig)
	if d.DID == "" || venue.IsZero() {
		return nil // guests and venues that do not resolve go unsigned
	}
	doc, err := signing.DocumentFromTags(d.Command, signing.Envelope{From: d.DID, MsgID: msgid, Venue: venue}, d.Text, tags)
	if errors.Is(err, signing.ErrNotSignable) {
		return nil
	}
	if err != nil {
		return fail(failCmd, "INVALID_EVENT", "The event cannot be signed: "+err.Error())
	}
	canonical, err := doc.Canonical()
	if err != nil {
		return fail(failCmd, "INVALID_EVENT", "The event cannot be signed: "+err.Error())
	}
	if hasSig {
		switch verdict, _ := signing.Verify(canonical, clientSig, s.lookupKey(d)); verdict {
		case signing.Valid:
			tags[TagSig] = clientSig
			return nil
		case signing.Invalid:
			return fail(failCmd, "SIGNATURE_INVALID", "That signature does not verify against the key it names")
		}
	}
	if IsMutation(d.Command, tags) {
		return fail(failCmd, "SIGNATURE_REQUIRED", "A signed request is required to modify messages on this server")
	}
	if s.cfg.Key != nil {
		tags[TagSig] = signing.Sign(s.cfg.Key, canonical)
	}
	return nil
}
