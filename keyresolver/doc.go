// Package keyresolver turns DIDs into DID documents and public keys.
//
// It owns DID syntax checking, DID document parsing, resolution of did:key
// (decoded locally), did:web and did:plc (fetched over HTTPS through a client
// guarded against server-side request forgery, with a cache and coalescing
// of concurrent look-ups), and signature verification with the resulting
// ed25519 and secp256k1 keys.
//
// What an outsider can make it do is bounded: documents list at most
// MaxVerificationMethods entries per list and CandidateKeys is linear in
// their size; fresh resolutions made for one client (WithClient) are rate
// limited; failures are logged once with the DID cut short (ShortDID); and
// Misses is the bounded, expiring set its callers use to remember fruitless
// look-ups.
//
// The SSRF guard is written here rather than taken from a library because it
// must pin the address it checked for the connection it dials (no second DNS
// look-up that a rebinding attacker could answer differently), and none of
// the modules available to the project does that.
package keyresolver
