// Package raft owns the cluster control plane of a node: its
// hashicorp/raft instance (log, stable and snapshot stores, transport,
// bootstrap, proposing and waiting for entries to apply), its gossip
// membership (hashicorp/memberlist), the cluster RPC that followers use to
// reach the leader, and the leader-only jobs, reconciliation of the raft
// configuration with gossip among them. It is the only package that imports
// hashicorp/raft (with raft/rafttest, which plays an outsider against these
// planes in tests); the deterministic state machine lives in raft/fsm and is
// seen here only through the StateMachine interface.
//
// How it works, and why it is built this way: DESIGN.md beside this file.
package raft
