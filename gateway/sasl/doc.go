// Package sasl implements the server side of Palaver's SASL mechanisms and the per-connection
// AUTHENTICATE conversation (IRCv3 400-byte chunking, failure counting):
//
//   - ATPROTO-CHALLENGE: minting single-use challenges, decoding client responses and verifying
//     them, either as a signature by a key of the DID's document (method "crypto") or as the
//     user's PDS access token checked with the PDS (method "atproto", freeq's "pds-session"). A
//     PDS access token is checked before it is sent (subject, expiry, not a refresh token), and
//     never logged, quoted in an error or kept (see verifyPDSSession).
//   - PLAIN (RFC 4616) and SCRAM-SHA-256 (RFC 5802, RFC 7677, no channel binding), offered when
//     the Verifier has Passwords: a login name (a DID, a hosted account's name or a nick a DID
//     owns) and one of the DID's client passwords, checked against SCRAM verifiers (StoredKey,
//     ServerKey) only; the password itself is never stored. A DID's passwords share one salt, so
//     one SCRAM exchange is checked against all of them: that is why the SCRAM server is written
//     here (scram.go) and not taken from a library whose server knows one credential per user.
//     An unknown login is answered with a stand-in salt and costs the same work. DeriveKeys and
//     NewPassword make verifiers and passwords for the proposers of new passwords.
//
// It produces Results, not IRC lines: the IRC gateway turns them into AUTHENTICATE, 904, 905,
// 906, 908 and ERROR lines.
package sasl
