// Package signing owns Palaver's per-event signatures, byte-compatible with
// freeq's `+freeq.at/sig`: the key id, the canonical document of every signed
// event kind (chat messages, deletes, reactions, coordination events and ACT
// task events), the sig tag format, the three-way verdict, and the evidence
// bundles a channel is exported in. It is pure: no I/O, no clocks, no key
// store. Callers hand in the wire inputs and a key lookup.
//
// A document is rebuilt from what was received (the wire body, the wire tags
// with IRC-unescaped values, the normalized venue) and canonicalized by
// node/canonical. The rules, each reproduced by the conformance tests
// against testdata/vectors:
//
//   - target is a Venue: a channel lowercased, or dm:<didA>,<didB> sorted;
//     an event with no venue cannot be signed.
//   - body and a coordination payload are "sha256:" + lowercase hex.
//   - optional fields are omitted when absent or empty.
//   - a message's coord covers a closed set of tags, keyed without the
//     +freeq.at/ prefix; an ACT document covers every act/act-* tag.
//
// Verification distinguishes forgery from ignorance: only "the key the kid
// names, and the bytes do not verify" is Invalid. An unknown algorithm, a
// malformed or legacy tag, an unknown kid, a fetched key that does not hash
// to its kid, or a document that cannot be rebuilt is Unverifiable.
//
// Ed25519 signatures are checked with curve25519-voi against each key's cached
// precomputed expansion, under options that reproduce crypto/ed25519's rules
// exactly (Ed25519Verify; differential tests and a fuzz target keep them equal):
// about 25 µs a check instead of 40 µs, which the per-message checks of signed
// chat (B6) and the verify endpoint (B7) spend most of their CPU on. A key
// that signs once, a SASL login's (B2), is checked by Ed25519VerifyOnce under
// the same options without an expansion.
//
// What this package does not decide, because it needs state: whether a
// referenced msgid is a root (signed events naming a revision are refused by
// the server), whether a key was retired before the message was made, and
// whether the signer's DID owns the key.
package signing
