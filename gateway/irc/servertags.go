package irc

import "bytes"

// tagDataTooLong reports whether a client's raw line carries more tag data (the bytes between the
// leading '@' and the space that ends the tags) than IRCv3 message-tags allows a client,
// maxClientTagData, counting every tag, client-only or not. Such a line is answered 417
// (ERR_INPUTTOOLONG) and dropped whatever its command: the specification has servers reject it,
// never truncate its tags.
func tagDataTooLong(raw []byte) bool {
	if len(raw) == 0 || raw[0] != '@' {
		return false
	}
	end := bytes.IndexByte(raw, ' ')
	if end < 0 {
		end = len(raw)
	}
	return end-1 > maxClientTagData
}

// serverOwnedTags are the client-only tags in freeq's namespace that only a server sets; a client
// that sends one has it dropped before the message is signed, stored or relayed, so that it can
// never pass for the server's word:
//
//   - +freeq.at/origin: the peer server a federated message came from (it gives that peer's
//     signatures authority over the message, and keeps the message from being sent to peers);
//   - +freeq.at/reactions: the reaction tallies replayed with history;
//   - +freeq.at/actor-class: the class of an agent's session, from its registration;
//   - +freeq.at/pin and +freeq.at/unpin: the notice of a pin change;
//   - +freeq.at/commit-verified and +freeq.at/commit-mismatch: the server's check of a reveal.
//
// The other tags of the namespace are the client's to set: +freeq.at/sig is the client's own
// signature (checked, and replaced or stripped, by the signing rules), +freeq.at/eventid the id
// the client minted for its message (adopted as the msgid and stripped), and the coordination,
// governance, media and AV tags are the client's content.
var serverOwnedTags = map[string]bool{
	"+freeq.at/origin":          true,
	"+freeq.at/reactions":       true,
	"+freeq.at/actor-class":     true,
	"+freeq.at/pin":             true,
	"+freeq.at/unpin":           true,
	"+freeq.at/commit-verified": true,
	"+freeq.at/commit-mismatch": true,
}

// serverOnlyTags are the tags the edge stores with a message for itself: clients cannot set them
// (clientTags keeps + tags only), no client receives them as tags (outMsg.forCaps leaves them
// out), and no signature covers them. composedTag is a multiline message's line composition;
// redactReasonTag is the reason a REDACT gave, which the REDACT lines carry.
var serverOnlyTags = map[string]bool{
	composedTag:     true,
	redactReasonTag: true,
}
