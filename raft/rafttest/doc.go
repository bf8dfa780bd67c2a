// Package rafttest owns the tools that play a process outside the cluster against a node's
// cluster planes, for tests: it speaks raft's wire (through hashicorp/raft's own
// NetworkTransport, in the clear or over TLS with any certificate), joins gossip with or without
// a key and with chosen metadata (hashicorp/memberlist), and sends raw cluster RPC frames. A test
// of the planes' authentication uses it to show that each attempt is refused. It lives under raft
// because only raft imports hashicorp/raft.
package rafttest
