// Package sfu is the selective forwarding unit of channel calls: WebRTC peer connections (pion),
// forwarding of every participant's audio and video to the others, renegotiation, keyframe
// requests and the wire view of each call (Inspect).
//
// It knows nothing of IRC, REST, Raft or authorization. A gateway authorizes a participant,
// decides which call it belongs to and then calls Join with a signalling sink; roster changes
// (part, kick, quit, ban, call end) reach the SFU as Kick and End.
//
// Model. One call per channel at a time, one PeerConnection per participant, the SFU always the
// offerer: a participant's PeerConnection starts with receive-only audio and video transceivers
// (the client attaches its tracks in its answer) plus a send transceiver for every track the
// others publish. A renegotiation asked for while an offer is outstanding is queued and sent
// after the answer; requests are debounced (Config.NegotiationDelay) so that several track
// changes make one offer. Forwarding copies every RTP packet of a published track into one local
// track bound to every subscriber (header extensions cleared: their ids are negotiated per
// connection). NACKs are answered hop by hop by pion's default interceptors; PLI and FIR from a
// subscriber are forwarded to the publisher, at most one per KeyframeInterval per track, and a
// keyframe is asked for whenever a subscriber connects to a track. RTCP is drained on every
// sender and receiver, since interceptors run only when it is read.
//
// All peer connections share one webrtc.API (media engine, interceptor registry, setting
// engine) and one UDP socket through an ICE UDP mux; mDNS is off; a public address can replace
// the host candidate's (Config.PublicIPs, for 1:1 NAT). With the mux bound to a loopback
// address only loopback candidates are gathered (tests). A client's candidates at loopback,
// private, link-local or named addresses are dropped, trickled or in an answer, so that the unit
// never sends UDP into its own host or network (candidates.go; Config.AllowPrivateCandidates for a
// LAN deployment and tests).
//
// Locking: a call's lock guards only its maps; a participant's negotiation lock serializes its
// offer/answer exchange; no lock is held across a blocking pion call that could wait on
// another participant.
package sfu
