package signing

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNoVenue means an event has no venue, so it cannot be signed: a bare
// nick with no resolvable DID, an empty target, or a malformed one.
var ErrNoVenue = errors.New("no venue")

// dmPrefix starts a direct-message venue.
const dmPrefix = "dm:"

// Venue is the normalized place an event was delivered in, the `target` of
// every signed document: a channel name lowercased, or dm:<didA>,<didB> with
// the two DIDs in ascending byte order. The zero Venue is "no venue". Build
// one with ChannelVenue, DMVenue, ResolveVenue or ParseVenue; a raw wire
// target is never a venue.
type Venue struct {
	name string
}

// String returns the venue as it appears in a canonical document.
func (v Venue) String() string { return v.name }

// IsZero reports whether v is "no venue".
func (v Venue) IsZero() bool { return v.name == "" }

// IsDM reports whether v is a direct-message venue.
func (v Venue) IsDM() bool { return strings.HasPrefix(v.name, dmPrefix) }

// isChannelName reports whether a target names a channel (IRC '#' or '&').
func isChannelName(target string) bool {
	return len(target) > 1 && (target[0] == '#' || target[0] == '&')
}

// ChannelVenue returns the venue of a channel: its name lowercased.
func ChannelVenue(channel string) (Venue, error) {
	if !isChannelName(channel) {
		return Venue{}, fmt.Errorf("signing: %w: %q is not a channel name", ErrNoVenue, truncate(channel))
	}
	return Venue{name: strings.ToLower(channel)}, nil
}

// DMVenue returns the venue of a conversation between two DIDs, in either
// order.
func DMVenue(didA, didB string) (Venue, error) {
	for _, did := range []string{didA, didB} {
		if !strings.HasPrefix(did, "did:") || strings.Contains(did, ",") {
			return Venue{}, fmt.Errorf("signing: %w: DM participant %q is not a DID", ErrNoVenue, truncate(did))
		}
	}
	if didB < didA {
		didA, didB = didB, didA
	}
	return Venue{name: dmPrefix + didA + "," + didB}, nil
}

// ResolveVenue turns a PRIVMSG/NOTICE/TAGMSG wire target into a venue. A
// channel is lowercased; anything else is a direct message between the
// sender and recipientDID, the DID the server resolved the target to (empty
// when the recipient is a guest or unknown, which leaves no venue).
func ResolveVenue(wireTarget, senderDID, recipientDID string) (Venue, error) {
	if isChannelName(wireTarget) {
		return ChannelVenue(wireTarget)
	}
	if wireTarget == "" || recipientDID == "" || senderDID == "" {
		return Venue{}, fmt.Errorf("signing: %w: %q has no resolvable DID on both ends", ErrNoVenue, truncate(wireTarget))
	}
	return DMVenue(senderDID, recipientDID)
}

// ParseVenue reads a stored venue: `dm:<did>,<did>` or a channel name (whose
// case is folded again, since federated rows may keep the origin's case).
func ParseVenue(s string) (Venue, error) {
	if rest, ok := strings.CutPrefix(s, dmPrefix); ok {
		a, b, found := strings.Cut(rest, ",")
		if !found {
			return Venue{}, fmt.Errorf("signing: %w: DM venue %q lacks a second DID", ErrNoVenue, truncate(s))
		}
		return DMVenue(a, b)
	}
	return ChannelVenue(s)
}
