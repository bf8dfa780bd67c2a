// Package node is Palaver's composition root: it turns a Config into a running node by opening the
// replicated state (raft and raft/fsm), the event store, the DID resolver and the SASL verifier,
// and by starting the IRC edge on TCP and TLS and the HTTP server that carries the REST API and
// IRC over WebSocket. It holds no protocol logic; it owns the wiring and start and stop order.
//
// Start (node.go) reads top to bottom: each step is a constructor that takes the parts it needs
// as arguments and returns its own, a local handed to the steps after it. Data directory → state
// machine, event store, streams (node/stream), server key → HTTP listener → cluster identity
// (clustered nodes only: <data>/cluster/node, made at the first start from the cluster secret
// file, created in <data>/cluster/secret by a first node and given with --cluster-secret to
// joining ones; see raft/trust) → Raft (a node without peers bootstraps a one-node cluster) →
// chat service → federation → IRC edge → exchange → leader jobs → purge of the sessions of an
// earlier process of this node → operator plane → surfaces → listeners. Surfaces subscribe to the
// streams and plug into the IRC edge in their own step. Whatever starts is added to a stop list;
// Close runs it backwards. Where parts need each other the cycle is broken in one place and says
// so (Raft's callbacks and the store it returns; the forwarding unit and the call gateway).
// Test faults (Config.Faults) reach the parts through one interface, faults (faults.go).
//
// Two planes face the network. The public one is the HTTP server (REST, WebSocket IRC) and the IRC
// listeners. The cluster one is Raft's port and the cluster listener (--cluster-addr), both mutual
// TLS with certificates of the cluster, and gossip, encrypted with the cluster's keys; the
// cluster listener carries the cluster RPC and, over HTTP, the event exchange between nodes
// (federation/exchange), whose requests are accepted only from servers of the Raft configuration.
// The exchange is not on the public HTTP server. An unclustered node opens no cluster port.
//
// Operators: the raft operator plane (`palaver cluster status`, `backup`) asks the node for its
// report (operator.go: version, its own messages log head, its exchange cursors, and the gauges the
// alerting rules watch) and for backup archives (backup.go: Raft snapshot, message store by
// VACUUM INTO, media, keys only when asked); RestoreArchive builds a data directory from one.
package node
