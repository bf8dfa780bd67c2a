// Package testcluster owns Palaver's multi-node test harness: it starts N real nodes in one
// process, on loopback ports with their data on disk, kills and restarts them, drives IRC clients
// against them, and checks what the clients saw.
//
// Cluster is the harness itself (Start, Kill, Restart, WaitConverged, Leader, DialIRC). Run adds
// the checked workload:
//
//   - Topic clients on every node write unique topics and read them back. A write is acknowledged
//     when its client sees its own TOPIC echo; a read is a TOPIC query fenced by a write of the
//     client's own (AWAY, answered once the node applied it), because a bare TOPIC reads the
//     node's local replica, which may lag the leader by design. The history goes to porcupine
//     (one register per channel). A write whose outcome is unknown (the connection dropped, or
//     the server said TEMPORARILY_UNAVAILABLE) counts as applied by the first time any client saw
//     its value, and is left out when nobody ever saw it.
//   - Chat clients on every node send numbered PRIVMSGs (acknowledged by their echo-message echo
//     with a msgid) and record every message they read. After their node restarts they reconnect,
//     join again and read what they missed with CHATHISTORY AFTER the last msgid they read. Every
//     acknowledged message must be read by every other chat client, and no source (live
//     delivery, one CHATHISTORY answer) may hand one a message twice.
//   - After the traffic every node must reach the same applied index and state hash.
//
// A seeded nemesis kills and restarts nodes (one at a time, sometimes the leader) while the
// workload runs. Partitions, leadership transfer and slow disks are not injected (see
// NemesisOptions).
//
// The checkers (CheckTopics, CheckDelivery) are plain functions over recorded histories, so they
// are tested on hand-made histories. porcupine is used rather than a hand-written checker: it is
// the standard linearizability checker in Go and handles concurrent and partitioned histories.
package testcluster
