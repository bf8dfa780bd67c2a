// Package raft owns this node's hashicorp/raft instance: its log, stable and
// snapshot stores, its transport, bootstrapping, proposing entries and
// waiting for them to be applied. It is the only package that imports
// hashicorp/raft; the deterministic state machine lives in raft/fsm and is
// seen here only through the StateMachine interface.
//
// # Storage
//
// On disk, <Dir>/raft-log.db (raft-boltdb/v2) is both the log and the stable
// store, with an in-memory cache of the newest entries in front of the log;
// <Dir>/snapshots is a file snapshot store keeping two snapshots. InMemory
// swaps all of it, and the TCP transport, for raft's in-memory versions so
// tests and in-process clusters never touch the disk or the network.
//
// # Bootstrap
//
// A node bootstraps only when Config.Bootstrap is set and raft reports no
// existing state (no term, no log, no snapshot): it writes a configuration
// with itself as the only voter, then elects itself after one election
// timeout. On every later start the state is already there and bootstrap is
// skipped, as rqlite and Consul do; bootstrapping twice would fork the
// cluster's history. Joining an existing cluster instead (memberlist, the
// leader adding the node as a voter) comes later and plugs in beside
// bootstrap and openTransport. The first start writes <Dir>/node-id before
// any raft state exists, and later starts refuse a directory whose id
// differs, or which has raft state but no id, so a node cannot silently
// adopt another node's log.
//
// # Propose and the applied index
//
// Propose hands the entry to raft and waits on its future, which raft
// answers only after this node's FSM has applied the entry; the caller thus
// gets the state machine's response and can read its own write locally. A
// context deadline becomes raft's enqueue timeout (10 s without one), and
// the context also bounds the wait for commit, because raft's timeout does
// not. On a follower Propose fails with a *NotLeaderError naming the leader;
// forwarding to the leader is the caller's job.
//
// The FSM adapter records the index of every entry it applies (commands and
// configuration changes) and wakes WaitApplied callers whose index it
// passed. raft's own AppliedIndex is not used for this because raft advances
// it when it hands entries to the FSM goroutine, before they are applied.
// raft does not tell FSM.Restore which index a snapshot covers, so the
// adapter writes the applied index in a small header at the start of every
// snapshot and puts it back on restore.
//
// On restart the newest snapshot is restored inside Open; entries after it
// are replayed once the node is leader again and has committed a new entry,
// so callers that need the full state call WaitForLeader and then Barrier.
package raft
