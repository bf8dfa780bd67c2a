package signing

import (
	"fmt"
	"strings"
)

// KindAct names ACT task-event documents in errors.
const KindAct = "act"

// Act is an ACT task event (a TAGMSG with +freeq.at/act). Its document is
// JCS over a flat map of every act/act-* tag, keyed without the +freeq.at/
// prefix, plus from (the +freeq.at/from tag), id and target. Other tags are
// not covered; no fixed field list, so a kind may add act-* tags freely.
type Act struct {
	// ID is the event id the sender minted (+freeq.at/eventid), supplied by
	// the caller rather than read from the tags.
	ID    string
	Venue Venue
	// Tags are the wire tags as received, values IRC-unescaped.
	Tags map[string]string
}

// Canonical returns the ACT document. A missing from, id or venue is an
// error, which verification reads as unverifiable.
func (a Act) Canonical() ([]byte, error) {
	from := a.Tags[TagFrom]
	if from == "" {
		return nil, &MissingFieldError{Kind: KindAct, Field: "from"}
	}
	if a.ID == "" {
		return nil, &MissingFieldError{Kind: KindAct, Field: "id"}
	}
	if a.Venue.IsZero() {
		return nil, fmt.Errorf("signing: act document: %w", ErrNoVenue)
	}
	doc := make(map[string]string, len(a.Tags)+3)
	for name, value := range a.Tags {
		if key, ok := actKey(name); ok {
			doc[key] = value
		}
	}
	doc["from"] = from
	doc["id"] = a.ID
	doc["target"] = a.Venue.String()
	return encode(KindAct, doc)
}

// actKey returns the covered key of an ACT wire tag: "act" or "act-*" after
// the +freeq.at/ prefix. Tags such as +freeq.at/actor-class are not covered.
func actKey(tagName string) (string, bool) {
	key, ok := strings.CutPrefix(tagName, tagPrefix)
	if !ok {
		return "", false
	}
	if key == "act" || strings.HasPrefix(key, "act-") {
		return key, true
	}
	return "", false
}

// IsActEvent reports whether the wire tags carry an ACT task event.
func IsActEvent(tags map[string]string) bool {
	_, ok := tags[TagAct]
	return ok
}
