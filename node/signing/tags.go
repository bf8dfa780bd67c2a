package signing

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// tagPrefix is the namespace of freeq's client tags.
const tagPrefix = "+freeq.at/"

// Wire tag names this package reads.
const (
	TagSig          = "+freeq.at/sig"
	TagEventID      = "+freeq.at/eventid"
	TagFrom         = "+freeq.at/from"
	TagAct          = "+freeq.at/act"
	TagEvent        = "+freeq.at/event"
	TagPayload      = "+freeq.at/payload"
	TagRef          = "+freeq.at/ref"
	TagTaskID       = "+freeq.at/task-id"
	TagEvidenceType = "+freeq.at/evidence-type"
	TagUnreact      = "+freeq.at/unreact"
	TagReply        = "+reply"
	TagDraftReply   = "+draft/reply"
	TagDraftEdit    = "+draft/edit"
	TagDraftDelete  = "+draft/delete"
	TagDelete       = "+delete"
	TagReact        = "+react"
	TagDraftReact   = "+draft/react"
)

// coordKeys is the closed set of tags a message's coord covers, in canonical
// (unprefixed) form. Everything else — account, time, msgid, origin,
// reactions, verdicts, typing, av-*, batch, label, multiline, the sig — is
// excluded.
var coordKeys = [...]string{
	"event", "evidence-type", "link-desc", "link-image", "link-title", "link-url",
	"media-alt", "media-blurhash", "media-duration", "media-filename", "media-h",
	"media-mime", "media-size", "media-url", "media-w", "payload", "ref", "task-id",
}

// coordTags holds the wire names of coordKeys, in the same order; computed
// once, never written.
var coordTags = func() (names [len(coordKeys)]string) {
	for i, key := range coordKeys {
		names[i] = tagPrefix + key
	}
	return names
}()

// CoordKeys returns the closed set of coord keys, sorted.
func CoordKeys() []string {
	return slices.Clone(coordKeys[:])
}

// Coord returns the covered coordination and attachment tags of a message,
// keyed without the +freeq.at/ prefix, values verbatim. Empty values are
// left out, like every other empty optional field.
func Coord(tags map[string]string) map[string]string {
	var coord map[string]string
	for i, key := range coordKeys {
		value := tags[coordTags[i]]
		if value == "" {
			continue
		}
		if coord == nil {
			coord = make(map[string]string, 4)
		}
		coord[key] = value
	}
	return coord
}

// SigFromTags returns the sig tag value, accepting the name with or without
// the leading '+'.
func SigFromTags(tags map[string]string) string {
	if v := tags[TagSig]; v != "" {
		return v
	}
	return tags[strings.TrimPrefix(TagSig, "+")]
}

// ReplyFromTags returns the msgid named by +reply, else +draft/reply.
func ReplyFromTags(tags map[string]string) string {
	return firstTag(tags, TagReply, TagDraftReply)
}

func firstTag(tags map[string]string, names ...string) string {
	for _, name := range names {
		if v := tags[name]; v != "" {
			return v
		}
	}
	return ""
}

// ErrNotSignable means a command and its tags describe no signed event
// (a typing notification, a TAGMSG with no event, a JOIN, ...).
var ErrNotSignable = errors.New("not a signable event")

// DocumentFromTags rebuilds the signed document of a received PRIVMSG,
// NOTICE or TAGMSG from its wire tags (IRC-unescaped values), the same way
// for the sender's server and for every later verifier:
//
//   - PRIVMSG/NOTICE: a Message; reply from +reply/+draft/reply, edit from
//     +draft/edit, coord from the tags.
//   - TAGMSG with +freeq.at/act: an Act whose id is env.MsgID (the adopted
//     +freeq.at/eventid) and whose from is the +freeq.at/from tag.
//   - TAGMSG with +draft/delete or +delete: a delete of that msgid.
//   - TAGMSG with +react/+draft/react or +freeq.at/unreact: a react or
//     unreact of the +reply msgid.
//   - TAGMSG with +freeq.at/event: a Coordination.
//
// References are taken as given; whether they name roots is the caller's
// check.
func DocumentFromTags(command string, env Envelope, body string, tags map[string]string) (Document, error) {
	switch strings.ToUpper(command) {
	case "PRIVMSG", "NOTICE":
		return Message{
			Envelope: env,
			Body:     body,
			Reply:    ReplyFromTags(tags),
			Edit:     tags[TagDraftEdit],
			Tags:     tags,
		}, nil
	case "TAGMSG":
		return tagmsgDocument(env, tags)
	}
	return nil, fmt.Errorf("signing: %s: %w", truncate(command), ErrNotSignable)
}

func tagmsgDocument(env Envelope, tags map[string]string) (Document, error) {
	if IsActEvent(tags) {
		return Act{ID: env.MsgID, Venue: env.Venue, Tags: tags}, nil
	}
	if subject := firstTag(tags, TagDraftDelete, TagDelete); subject != "" {
		return Mutation{Envelope: env, Kind: KindDelete, Subject: subject}, nil
	}
	if emoji := firstTag(tags, TagReact, TagDraftReact); emoji != "" {
		return Mutation{Envelope: env, Kind: KindReact, Subject: ReplyFromTags(tags), Emoji: emoji}, nil
	}
	if emoji := tags[TagUnreact]; emoji != "" {
		return Mutation{Envelope: env, Kind: KindUnreact, Subject: ReplyFromTags(tags), Emoji: emoji}, nil
	}
	if event := tags[TagEvent]; event != "" {
		return Coordination{
			Envelope: env,
			Event:    event,
			Payload:  tags[TagPayload],
			Ref:      firstTag(tags, TagRef, TagTaskID),
			Evidence: tags[TagEvidenceType],
		}, nil
	}
	return nil, fmt.Errorf("signing: TAGMSG: %w", ErrNotSignable)
}
