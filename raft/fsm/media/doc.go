// Package media is the replicated state machine's media module: media and keys for encrypted
// channels, what every node must agree on so that any node can serve any of it. Uploads are
// recorded by their metadata only (the bytes stay on the disks of their holder nodes, see
// gateway/media); the media capability key (the HMAC key of capability URLs, drawn once by a
// proposer); pre-key bundles per DID; sealed group keys per channel, epoch and member; media
// spaces per channel. It owns that state (the snapshot section "media"), its command types
// (40–47), its result codes (30–36) and the read view Of; it registers itself with the core
// (fsm.Register) when the package loads. Every collection is bounded by the constants of media.go.
package media
