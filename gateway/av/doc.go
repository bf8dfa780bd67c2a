// Package av owns the call surfaces of a node: the session routes (/api/v1/sessions,
// /api/v1/sessions/{id}, /api/v1/channels/{name}/sessions), the per-call signalling token
// (/api/v1/av/sessions/{id}/token) and the signalling WebSocket
// (/api/v1/av/sessions/{id}/ws), an operator's end of a call (/api/v1/sessions/{id}/end), the
// +freeq.at/av-* TAGMSGs both ways (members act on their channel's call with action tags, checked
// by CheckMessage on the IRC edge; the server tells the channel about its call), and keeping the
// forwarding unit's connections within the replicated roster.
//
// The roster is replicated state (the raft/fsm/av module): which node hosts a channel's call, who is in
// it, when it started and ended. The media go through the forwarding unit (package sfu) of the
// hosting node only, so a token minted on any node names the host's signalling URL. A token is
// signed with the minting node's server key and checked by the host against the replicated
// public key; it names one call, one channel and one account and expires after TokenTTL: a
// token for one call never opens another.
//
// Media membership never outlives roster membership: when an account leaves the channel (PART,
// KICK, QUIT, the end of its IRC session) or is banned, Observe disconnects it from the
// forwarding unit at once and the host proposes its leave; when the roster drops it or the call
// ends, its connection is closed.
//
// When the forwarding unit is off (--no-av) or failed to start, every route answers 503.
package av
