package coord

import (
	"context"
	"crypto/ed25519"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/raft/fsm"
	fsmcoord "github.com/palaver-chat/palaver/raft/fsm/coord"
	"github.com/palaver-chat/palaver/raft/fsm/coord/act"
)

// Tagmsg is a TAGMSG the IRC edge hands over: its sender, venue and tags as received.
type Tagmsg struct {
	// SenderDID is the authenticated DID of the sending session ("" for a guest).
	SenderDID string
	// Venue is the normalized venue (a folded channel, or dm:<did>,<did>).
	Venue string
	// Tags are the wire tags, values unescaped.
	Tags map[string]string
	// EventID is the event's id when the edge already adopted +freeq.at/eventid as the msgid
	// (and stripped the tag); "" reads the tag.
	EventID string
	// Lookup finds the sender's key by kid (session key, did:key, registered keys); nil uses the
	// replicated key registry and did:key only.
	Lookup signing.KeyLookup
}

// Receipt is the server's confirm receipt of a filed act event: a TAGMSG to send in Venue.
type Receipt struct {
	Venue string
	Tags  map[string]string
}

// IsCoordination reports whether a TAGMSG's tags make it a coordination event: an act event
// (+freeq.at/act or any +freeq.at/act-*) or a typed event (+freeq.at/event).
func IsCoordination(tags map[string]string) bool {
	for name := range tags {
		if isActTag(name) || name == signing.TagEvent {
			return true
		}
	}
	return false
}

func isActTag(name string) bool {
	key, ok := strings.CutPrefix(name, "+freeq.at/")
	return ok && (key == "act" || strings.HasPrefix(key, "act-"))
}

// Check checks a coordination TAGMSG as the IRC edge receives it, before it is relayed: its
// sender, event id, signature and venue, and the verdict filing it would get now. It never
// proposes. nil lets it through.
func (s *Service) Check(m Tagmsg) *Fail {
	_, _, f := s.prepare(m, true)
	return f
}

// File checks a coordination TAGMSG and files it through Raft. It returns the confirm receipt
// to send for a filed act event (nil for a typed event or without a server key), or the FAIL
// TAGMSG refusal; a refused event changes nothing.
func (s *Service) File(ctx context.Context, m Tagmsg) (*Receipt, *Fail) {
	cmd, venue, f := s.prepare(m, false)
	if f != nil {
		return nil, f
	}
	var receipt *preparedReceipt
	if c, ok := cmd.(fsmcoord.FileAct); ok {
		if receipt = s.receipt(venue, c.Fields[act.FieldKind], c.EventID, c.Fields[act.FieldID]); receipt != nil {
			c.Receipt = receipt.record
			cmd = c
		}
	}
	res, err := s.propose(ctx, cmd)
	if err != nil {
		return nil, tempFail("TAGMSG")
	}
	if f := resultFail("TAGMSG", res); f != nil {
		return nil, f
	}
	if receipt == nil {
		return nil, nil
	}
	return &Receipt{Venue: venue.String(), Tags: receipt.tags}, nil
}

// prepare checks m and builds the command that files it. A typed event may come without an event
// id when checking (the edge mints its msgid after the check); an act event may not.
func (s *Service) prepare(m Tagmsg, checking bool) (fsm.Command, signing.Venue, *Fail) {
	hasAct, hasEvent := false, m.Tags[signing.TagEvent] != ""
	fields := map[string]string{}
	for name, v := range m.Tags {
		if isActTag(name) {
			hasAct = true
			fields[strings.TrimPrefix(name, "+freeq.at/")] = v
		}
	}
	switch {
	case !hasAct && !hasEvent:
		return nil, signing.Venue{}, fail("TAGMSG", "INVALID_TARGET", "Not a coordination event")
	case hasAct && hasEvent:
		return nil, signing.Venue{}, fail("TAGMSG", "MIXED_TAGS", "An event carries either act tags or +freeq.at/event, not both")
	case m.SenderDID == "":
		return nil, signing.Venue{}, fail("TAGMSG", "ACCOUNT_REQUIRED", "Coordination events need an authenticated account")
	}
	venue, err := signing.ParseVenue(m.Venue)
	if err != nil {
		return nil, venue, fail("TAGMSG", "INVALID_TARGET", "Coordination events go to a channel or a DM with a DID user")
	}
	eventID := m.EventID
	if eventID == "" {
		eventID = m.Tags[signing.TagEventID]
	}
	if eventID == "" && hasEvent && checking {
		eventID = "unassigned"
	}
	if eventID == "" || len(eventID) > 64 {
		return nil, venue, fail("TAGMSG", "EVENTID_REQUIRED", "Coordination events carry +freeq.at/eventid")
	}
	if hasEvent {
		cmd, f := s.prepareEvent(m, venue, eventID)
		return cmd, venue, f
	}
	from := m.Tags[signing.TagFrom]
	switch {
	case from == "":
		return nil, venue, fail("TAGMSG", "ACTOR_REQUIRED", "Act events carry +freeq.at/from")
	case from != m.SenderDID:
		return nil, venue, fail("TAGMSG", "ACTOR_MISMATCH", "+freeq.at/from is not your account")
	case fields[act.FieldKind] == "":
		return nil, venue, fail("TAGMSG", "UNKNOWN_KIND", "Act events carry +freeq.at/act=<kind>")
	case fields[act.FieldVerb] == act.Default.Confirmation.Verb:
		return nil, venue, fail("TAGMSG", "ILLEGAL_STEP", "A confirmation is the server's receipt, never a sender's step")
	case len(fields) > fsmcoord.MaxActFields:
		return nil, venue, fail("TAGMSG", "INVALID_TARGET", "Too many act tags")
	}
	sig := signing.SigFromTags(m.Tags)
	if sig == "" {
		return nil, venue, fail("TAGMSG", "SIGNATURE_REQUIRED", "Act events are signed (+freeq.at/sig)")
	}
	canonical, err := signing.Act{ID: eventID, Venue: venue, Tags: m.Tags}.Canonical()
	if err != nil {
		return nil, venue, fail("TAGMSG", "SIGNATURE_UNVERIFIABLE", "The act document cannot be built: "+err.Error())
	}
	switch verdict, reason := signing.Verify(canonical, sig, s.lookupOr(m)); verdict {
	case signing.Invalid:
		return nil, venue, fail("TAGMSG", "SIGNATURE_INVALID", "The act signature does not verify")
	case signing.Unverifiable:
		return nil, venue, fail("TAGMSG", "SIGNATURE_UNVERIFIABLE", "The act signature cannot be checked: "+string(reason))
	}
	code := fsm.OK
	s.read(func(st *fsm.State) { code = fsmcoord.Of(st).JudgeAct(venue.String(), eventID, from, fields) })
	if f := resultFail("TAGMSG", fsm.Result{Code: code}); f != nil {
		return nil, venue, f
	}
	return fsmcoord.FileAct{Venue: venue.String(), EventID: eventID, From: from, Fields: fields, Canonical: string(canonical), Signature: sig}, venue, nil
}

// prepareEvent checks a typed coordination event (+freeq.at/event) and builds its command.
func (s *Service) prepareEvent(m Tagmsg, venue signing.Venue, eventID string) (fsm.Command, *Fail) {
	if from := m.Tags[signing.TagFrom]; from != "" && from != m.SenderDID {
		return nil, fail("TAGMSG", "ACTOR_MISMATCH", "+freeq.at/from is not your account")
	}
	ref := m.Tags[signing.TagRef]
	if ref == "" {
		ref = m.Tags[signing.TagTaskID]
	}
	sig := signing.SigFromTags(m.Tags)
	if sig != "" {
		doc, err := signing.DocumentFromTags("TAGMSG", signing.Envelope{From: m.SenderDID, Venue: venue, MsgID: eventID}, "", m.Tags)
		if err == nil {
			if canonical, err := doc.Canonical(); err == nil {
				if verdict, _ := signing.Verify(canonical, sig, s.lookupOr(m)); verdict == signing.Invalid {
					return nil, fail("TAGMSG", "SIGNATURE_INVALID", "The event's signature does not verify")
				}
			}
		}
	}
	cmd := fsmcoord.FileCoordEvent{Venue: venue.String(), EventID: eventID, Type: m.Tags[signing.TagEvent], ActorDID: m.SenderDID,
		Payload: DecodePayload(m.Tags[signing.TagPayload]), Ref: ref, Evidence: m.Tags[signing.TagEvidenceType], Signature: sig}
	if len(cmd.Payload) > fsmcoord.MaxCoordValue || len(cmd.Type) > 64 || len(ref) > 128 || len(cmd.Evidence) > 64 {
		return nil, fail("TAGMSG", "INVALID_TARGET", "The event's type, payload, reference or evidence type is too long")
	}
	task := ref
	if task == "" && cmd.Type == fsmcoord.EventTaskRequest {
		task = eventID
	}
	code := fsm.OK
	s.read(func(st *fsm.State) { code = fsmcoord.Of(st).JudgeCoordEvent(cmd.Venue, cmd.Type, task, cmd.ActorDID) })
	if f := resultFail("TAGMSG", fsm.Result{Code: code}); f != nil {
		return nil, f
	}
	return cmd, nil
}

// DecodePayload is a +freeq.at/payload value as it is filed: percent-decoded (clients escape
// ';' and ' ' so the JSON survives the tag syntax), or as sent when it is not valid escaping. The
// signature covers the value as sent, and is checked before.
func DecodePayload(wire string) string {
	if v, err := url.PathUnescape(wire); err == nil && utf8.ValidString(v) {
		return v
	}
	return wire
}

func (s *Service) lookupOr(m Tagmsg) signing.KeyLookup {
	if m.Lookup != nil {
		return m.Lookup
	}
	return s.keyLookup(m.SenderDID)
}

// keyLookup finds a key of did by kid: a did:key's own key, or a live key in the registry.
func (s *Service) keyLookup(did string) signing.KeyLookup {
	return func(kid string) (ed25519.PublicKey, bool) {
		if k, err := keyresolver.ParseDIDKey(did); err == nil && k.Type == keyresolver.Ed25519 && signing.KID(k.Raw) == kid {
			return ed25519.PublicKey(k.Raw), true
		}
		var found ed25519.PublicKey
		now := s.cfg.Now().Unix()
		s.read(func(st *fsm.State) {
			if k, ok := st.Key(did, kid); ok && k.Live(now) {
				found = k.PublicKey()
			}
		})
		return found, found != nil
	}
}

// preparedReceipt is a receipt before the event is filed.
type preparedReceipt struct {
	record *fsmcoord.ActReceipt
	tags   map[string]string
}

// receipt prepares the signed confirm receipt of event eventID (on action actID; the opener's own
// id when actID is empty).
func (s *Service) receipt(venue signing.Venue, kind, eventID, actID string) *preparedReceipt {
	if s.cfg.ServerKey == nil || s.cfg.ServerDID == "" || s.cfg.NewID == nil {
		return nil
	}
	if actID == "" {
		actID = eventID
	}
	id := s.cfg.NewID()
	tags := map[string]string{
		"+freeq.at/act":         kind,
		"+freeq.at/act-verb":    act.Default.Confirmation.Verb,
		"+freeq.at/act-id":      actID,
		"+freeq.at/act-subject": eventID,
		signing.TagFrom:         s.cfg.ServerDID,
		signing.TagEventID:      id,
	}
	canonical, err := signing.Act{ID: id, Venue: venue, Tags: tags}.Canonical()
	if err != nil {
		s.cfg.Logger.Warn("confirm receipt", "err", err)
		return nil
	}
	sig := signing.Sign(s.cfg.ServerKey, canonical)
	tags[signing.TagSig] = sig
	return &preparedReceipt{
		record: &fsmcoord.ActReceipt{EventID: id, From: s.cfg.ServerDID, Canonical: string(canonical), Signature: sig},
		tags:   tags,
	}
}
