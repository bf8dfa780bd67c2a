// Package sasl implements the server side of the SASL ATPROTO-CHALLENGE
// mechanism: minting challenges, the per-connection AUTHENTICATE conversation
// (IRCv3 400-byte chunking, single-use challenges, failure counting), decoding
// client responses and verifying them, either as a signature by a key of the
// DID's document (method "crypto") or as the user's PDS access token checked
// with the PDS (method "atproto", freeq's "pds-session"). A PDS access token
// is checked before it is sent (subject, expiry, not a refresh token), and
// never logged, quoted in an error or kept (see verifyPDSSession).
//
// It produces Results, not IRC lines: the IRC gateway turns them into
// AUTHENTICATE, 904, 906, 908 and ERROR lines.
package sasl
