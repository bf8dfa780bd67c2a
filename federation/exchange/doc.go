// Package exchange moves chat events between the nodes of a cluster: the data plane, which stays
// out of the Raft log. It also owns what the cluster's plane and federation between servers
// (federation/peering) share: the one allow-list of peers with their trust levels (allow.go), the
// one cursor scheme per (peer, log) (cursors.go), and the one inbound pipeline every peer's events
// go through (inbound.go: trust gate, acceptance rules, dedupe by msgid, store, Stored stream).
//
// Each node's event store is its durable outbox: a message is stored before it is acknowledged to
// its sender, and the rows a node originated, read in the order it stored them, are what peers
// copy. Delivery has two paths. Stream: each node keeps one long-lived connection to every peer
// (stream.go) and sends it its own rows read back from its durable log, batched in a compact
// binary form (frame.go) with one signature per batch, woken when it stores a message and idle
// otherwise; the peer stores each batch in one commit and moves its cursor for the origin over
// it. The streams share the rows' encoded form, taken from memory when they can (window.go). Pull:
// every peer keeps, per origin, a durable cursor (the last origin seq it stored) and asks the
// origin for the rows after it at start, on Kick, and every PullEvery for each log no healthy
// stream from that origin carries (pull.go): an idle cluster whose streams are up does not poll
// for them. Pull alone is complete: a node that was down,
// partitioned or behind catches up from its cursor, so no acknowledged event is lost. Duplicates
// from the two paths are dropped by msgid when stored, and only a newly stored event is delivered
// to local members, so nothing is delivered twice. Reactions and ephemeral TAGMSGs are pushed best effort over HTTP (POST, bounded
// queues per peer), and their logs are pulled like the messages.
//
// The routes (GET and POST /internal/v1/events, GET /internal/v1/stream) are served on the cluster listener's HTTP plane
// only, never on the public HTTP server: a node reaches its peers at https://<cluster address>
// over mutual TLS with certificates of the cluster (raft/trust), and a receiver first asks
// Config.Authenticate who is at the other end of the connection (the node its certificate names,
// which must be a server of the Raft configuration) before it reads a byte of the body. In
// defence in depth every request is also signed by the sending node's server key (ed25519, the
// key published at its did:web document and registered through Raft), and the signer must be
// that same node: a push must come from the origin of every event in it, and a pull is answered
// only to the cluster node that asks. Individual messages keep their own
// +freeq.at/sig, so a third party can verify each one against the origin (key_source
// origin-server).
//
// An edit is a row and travels like a message. A delete is a state of a row, so deletes travel as
// a log of their own: the node where a delete was made files it in the same transaction, peers
// pull that log with a second cursor ("in:deletes:<origin>", cursors.go), and a delete that names a message a peer
// has not stored yet waits until the message arrives from its own origin. Reactions travel the
// same way, in a reaction log with a third cursor ("in:reactions:<origin>"; see reactions.go), and other
// channel TAGMSGs (typing notifications) and status messages (IRC STATUSMSG, Event.Status) are
// pushed best effort and never stored or pulled.
//
// A panic in the exchange's own goroutines, or in a delivery callback, does not end the process:
// it is logged with its stack and the item that panicked is skipped, and the loop goes on. A push
// batch that panicked is left to the peer's pull; a pull of one peer that panicked is abandoned for
// that round (its cursors moved only over what was stored) and tried again on the next one; a
// delivery to local sessions that panicked is skipped (the event stays stored, in history).
package exchange
