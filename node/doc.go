// Package node is Palaver's composition root: it turns a Config into a running node by opening the
// replicated state (raft and raft/fsm), the event store, the DID resolver and the SASL verifier,
// and by starting the IRC edge on TCP and TLS and the HTTP server that carries the REST API and
// IRC over WebSocket. It holds no protocol logic; it owns start and stop order.
//
// Start is a flat list of constructors (one method each, see Start's steps): data directory →
// state machine and streams (node/stream) → cluster identity (clustered nodes only: the node's
// credentials in <data>/cluster/node, its own key and the certificate the cluster's CA issued for
// it, made at its first start from the cluster secret file, created in <data>/cluster/secret by a
// first node and given with --cluster-secret to joining ones; see raft/trust) → Raft (a node
// without peers bootstraps a one-node cluster) → event store → federation → IRC edge → exchange
// → purge of sessions left by an earlier process of this node → listeners. Surfaces subscribe to
// the streams in their constructors. Stop order is the reverse: listeners, clients, Raft, the
// streams, the event store.
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
