// Package assist owns the assistance tools at POST /agent/tools/<name> and the free-form
// POST /agent/session: their input schemas, the evidence envelope every answer is wrapped in,
// the disclosure tiers and redactions, the per-DID record of recent disconnects this node saw,
// and the client of an OpenAI-compatible chat completions provider that routes a free-form
// request to the tools.
//
// Every tool reads the node's real state: the replicated state through the read methods of
// raft/fsm (its Diagnosis view), the event store, the IRC edge's send checks and disconnects, the
// Raft and exchange counters. Nothing is canned.
//
// Disclosure tiers, lowest first: public (no bearer), account (the bearer's own DID), channel
// member, channel operator, server operator (--oper-did, or a session that is an operator). A
// tool asked about another account answers <TOOL>_SELF_ONLY (freeq's codes, e.g.
// DIAGNOSE_JOIN_FAILURE_SELF_ONLY); a channel the caller may not read, and for
// diagnose_message_ordering one it is not a member of, answers <TOOL>_REQUIRES_MEMBERSHIP. A
// secret channel (+s) the caller is not in is answered as a missing one (CHANNEL_DOES_NOT_EXIST).
// What a tool leaves out for the caller's tier is named in redactions; no msgid or text of a
// channel the caller cannot read appears in any answer.
//
// Every answer is 200 with the envelope, malformed input included (INVALID_INPUT); unknown
// input fields are ignored.
package assist
