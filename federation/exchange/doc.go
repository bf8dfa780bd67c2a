// Package exchange moves chat events between peers: the nodes of a cluster, and the federated
// servers the operator configured. It is the data plane, which stays out of the Raft log, and it
// owns what both kinds of peer share: the one allow-list of peers with their trust levels
// (allow.go), the one wire (a signed binary stream per peer, stream.go and frame.go), the one
// outbox per peer over the origin's own durable logs, the one cursor scheme per (peer, log)
// (cursors.go), and the one inbound pipeline every peer's events go through (inbound.go: trust
// gate, acceptance rules, dedupe by msgid, store, Stored stream). Linked-channel authority
// (the home rule, requests, presence) is federation/peering's, plugged in through Servers.
//
// Each node's event store is its durable outbox: a message is stored before it is acknowledged to
// its sender, and what a node originated, read from its three logs (messages and edits, deletes,
// reactions) in the order it stored them, is what peers copy. Stream: each node keeps one
// long-lived connection to every peer and sends it its own rows read back from its durable logs,
// a frame carrying a section of each log (frame.go) with one signature per frame, woken when it
// stores something and idle otherwise (a heartbeat every 3 s); the peer applies each frame in one
// commit per log and acknowledges its positions. A log that did not advance (a delete waiting for
// its message) is sent again only when it grows or at the heartbeat. The streams share the rows'
// encoded form, taken from memory when they can (window.go). Pull: every cluster node keeps, per
// origin and log, a durable cursor and asks the origin for the rows after it at start, on Kick,
// and every PullEvery for each log no healthy stream from that origin carries (pull.go). Pull
// alone is complete: a node that was down, partitioned or behind catches up from its cursors, so
// no acknowledged event is lost. Duplicates from the two paths are dropped by msgid when stored,
// and only a newly stored event is delivered to local members, so nothing is delivered twice.
// Typing TAGMSGs and status messages (IRC STATUSMSG, Event.Status) are pushed best effort over
// HTTP (POST, bounded queues per peer) and never stored or pulled.
//
// Channel events (IRC event playback: JOIN, PART, MODE, TOPIC ... lines) are not chat: every node
// files the same rows from its applied Raft log. A node that did not apply some entries itself
// (it joined later, or installed a snapshot: Config.EventsGap) fills in their rows from its peers
// (GET /internal/v1/channel-events, channelevents.go).
//
// Cluster routes (GET and POST /internal/v1/events, GET /internal/v1/stream, GET
// /internal/v1/channel-events) are served on the
// cluster listener's HTTP plane only: a node reaches its peers at https://<cluster address> over
// mutual TLS with certificates of the cluster (raft/trust), and a receiver first asks
// Config.Authenticate who is at the other end of the connection (a server of the Raft
// configuration) before it reads a byte of the body. Every request is also signed by the sending
// node's server key (registered through Raft), and the signer must be that same node: a push or
// stream must come from the origin of every event in it, and a pull is answered only to the node
// that asks. The receiver of a cluster stream holds the cursors (in:<log>:<origin>), moved only
// over what it stored.
//
// Configured servers (servers.go) get the same stream over public HTTPS: each node dials every
// server's GET /federation/v1/stream (MountPublic on the receiver's public engine), signed by its
// server key with its server's DID as signer; the receiver's Servers.AuthenticateStream names the
// server before the upgrade (401, or 403 for one that is not a peer or is readonly), each frame is
// verified with that key, and Servers.ReceiveFrame applies it (peering's checks, the pipeline),
// paced to the federation limit; a frame holds at most 100 items. The sender holds these cursors
// (out:<log>:<server>), filters rows with Servers.Due*, and moves a cursor only over what the
// server acknowledged. A slow or dead server holds only its own goroutine, and its frames are
// received on a path of their own, so no server starves the cluster's streams.
//
// No item stops a log: an item a receiver cannot accept (over the limits of one item in node/limits,
// malformed, or refused by an acceptance rule) is a dead letter (deadletters.go): recorded in the
// store's dead_letters table with its peer, origin, log, seq, msgid and reason, counted in
// palaver_exchange_dead_letters_total{peer,reason} (a series from 0 for every live peer and
// reason, so an alert on its increase sees the first), and passed over, the cursor moving past it as
// past a stored item. Only a delete or reaction waiting for its message holds its log. The sizes of
// every hop come from node/limits, and limits_test.go checks that a page of items at their
// largest, as encoded, fits a stream frame, a pull's answer (cut by bytes, with "more") and a
// server's frame.
//
// A panic in the exchange's own goroutines, or in a delivery callback, does not end the process:
// it is logged with its stack and the item that panicked is skipped, and the loop goes on. A
// stream that panicked reconnects and resends from the receiver's positions; a pull of one peer
// that panicked is abandoned for that round (its cursors moved only over what was stored) and
// tried again on the next one; a delivery to local sessions that panicked is skipped (the event
// stays stored, in history).
package exchange
