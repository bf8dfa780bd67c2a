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
// How it works, and why it is built this way: DESIGN.md beside this file.
package testcluster
