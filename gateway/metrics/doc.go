// Package metrics owns the gateway's Prometheus collectors: one Set per
// server, on its own registry (never the global default), with every
// metric named under the palaver_ prefix, plus the HTTP handlers that
// expose them: Handler, every metric, for the operator's listener
// (--pprof-addr), and PublicHandler, for the public /metrics the contract
// lists, without what maps the deployment (families labelled by peer, node,
// holder or server, and the Raft term and applied index).
package metrics
