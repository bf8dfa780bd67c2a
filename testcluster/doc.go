// Package testcluster owns Palaver's multi-node test harness: it starts N real nodes with their
// data on disk, injects faults, drives IRC clients against them, and checks what the clients saw.
//
// The nodes run in this process (IRC and HTTP on loopback ports; Raft, gossip and the cluster
// listener, which carries the cluster RPC and the event exchange over mutual TLS, on a
// raft.InmemNetwork passed through node.Faults, so links between chosen pairs of nodes can be cut
// and healed), or, with Options.Processes, as separate `palaver serve` processes on loopback
// ports, killed with kill -9. Either way the first node creates the cluster secret in its data
// directory and the others join with it (--cluster-secret).
//
// Cluster is the harness itself (Start, Kill, Restart, Partition, Isolate, Heal,
// TransferLeadership, SetDiskDelay, WaitConverged, Leader, DialIRC). Run adds the checked
// workload:
//
//   - Topic clients on every node write unique topics and read them back. A write is acknowledged
//     when its client sees its own TOPIC echo; a read is a TOPIC query fenced by a write of the
//     client's own (AWAY, answered once the node applied it), because a bare TOPIC reads the
//     node's local replica, which may lag the leader by design. The history goes to porcupine
//     (one register per channel). A write whose outcome is unknown (the connection dropped, or
//     the server said TEMPORARILY_UNAVAILABLE) counts as applied by the first time any client saw
//     its value, and is left out when nobody ever saw it.
//   - Nick clients on every node claim nicks of a small shared pool (NICK from their own nick:
//     the echo, or 433 when someone holds it) and release them (NICK back), and read who holds
//     one (WHOIS after the AWAY fence; the owner is the USER name, unique per connection). A
//     connection holds at most one pool nick, so each write touches one register. A nick change
//     whose outcome is unknown ends the connection; the end of a session releases what it held
//     at an unknown time after its last answered operation.
//   - Mode clients, logged in as server operators (OPER, so the right survives reconnections),
//     toggle +m/-m, +n/-n, +t/-t, +k key/-k on a channel and read them with a MODE query after
//     the fence; model: the channel's mode set and key.
//   - Pin clients, operators too, PIN and UNPIN messages stored at setup and read the pin list
//     with PINS after the fence or from REST with ?consistency=strong; model: the pin list,
//     newest first, with the server's answers ("already pinned", "not pinned"). MODE and PIN
//     answer nothing on success, so a PING after them marks the end of the command.
//     Nick, mode and pin writes whose outcome is unknown stay in the history as operations that
//     may take effect at any time after they began, or never.
//   - Chat clients on every node send numbered PRIVMSGs (acknowledged by their echo-message echo
//     with a msgid) and record every message they read. After their node restarts they reconnect,
//     join again and read what they missed with CHATHISTORY AFTER the last msgid they read. Every
//     acknowledged message must be read by every other chat client, and no source (live
//     delivery, one CHATHISTORY answer) may hand one a message twice.
//   - After the traffic every node must reach the same applied index and state hash.
//
// A seeded nemesis injects one fault at a time while the workload runs (see FaultKind): kill and
// restart, network partition and heal, leadership transfer, slow Raft log writes, poison (a node
// stores rows no peer can accept: an oversize message, a malformed one, a delete and a reaction
// with oversize tags, which its streams and the peers' pulls carry). Processes get
// kill rounds only, and upgrade rounds (FaultUpgrade): the nodes start as a previous version's
// binary and each round stops one with SIGTERM and starts the current build on its data
// directory, a rolling upgrade under the same checks (`palaver testcluster --upgrade-from`).
// Memberlist gossip runs over the partitioned network too, so a cut node is declared dead by
// gossip and comes back alive after the heal (DeadNodeGrace is far longer than any fault, so no
// node is removed from the Raft configuration).
//
// The checkers (CheckTopics, CheckNicks, CheckModes, CheckPins, CheckDelivery) are plain functions
// over recorded histories, so they are tested on hand-made histories. porcupine is used rather than
// a hand-written checker: it is the standard linearizability checker in Go and handles concurrent
// and partitioned histories.
//
// The test and load tooling lives in subpackages here, not under gateway/: ircclient (the IRC
// client of the black-box tests, `palaver login` and this harness), load (the load generator behind
// `palaver bench`) and loopback (loopback ports).
package testcluster
