// Package node is Palaver's composition root: it turns a Config into a running node by opening the
// replicated state (raft and raft/fsm), the event store, the DID resolver and the SASL verifier,
// and by starting the IRC edge on TCP and TLS and the HTTP server that carries the REST API and
// IRC over WebSocket. It holds no protocol logic; it owns start and stop order.
//
// Start order: data directory → state machine → Raft (a node without peers bootstraps a one-node
// cluster) → event store → IRC edge → purge of sessions left by an earlier process of this node →
// listeners. Stop order is the reverse: listeners, clients, Raft, the event store.
package node
