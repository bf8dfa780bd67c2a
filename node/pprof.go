package node

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// startPprof serves the runtime profiles (net/http/pprof), the replica's state
// (/debug/palaver/state) and every metric (/metrics; the public port's /metrics leaves out the
// families that map the deployment) on their own listener, never on the public HTTP server:
// --pprof-addr is for operators, benchmarks and test harnesses, and should name a loopback address.
func (n *Node) startPprof(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("pprof listener %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("GET /debug/palaver/state", n.serveReplicaState)
	mux.Handle("GET /metrics", n.metrics.Handler())
	n.pprofSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	n.pprofAddr = ln.Addr().String()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.pprofSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("pprof server", "err", err)
		}
	}()
	n.log.Info("serving runtime profiles", "addr", n.pprofAddr)
	return nil
}

// PprofAddr is the address the runtime profiles are served on ("" without --pprof-addr).
func (n *Node) PprofAddr() string { return n.pprofAddr }

// ReplicaState is what /debug/palaver/state answers: enough for a harness to compare the replicas
// of nodes running as separate processes.
type ReplicaState struct {
	AppliedIndex uint64 `json:"applied_index"` // Raft index applied (commands and configuration entries)
	StateIndex   uint64 `json:"state_index"`   // index of the last entry applied to the hashed state
	Hash         string `json:"hash"`          // hex SHA-256 of the state's snapshot encoding
}

// serveReplicaState answers the replica's indexes and state hash, computed for this request: the
// hash encodes the whole state under its read lock, so it is served here, on demand, and never
// as a metric a monitoring system would scrape.
func (n *Node) serveReplicaState(w http.ResponseWriter, _ *http.Request) {
	applied := n.raft.Status().AppliedIndex
	index, hash := n.machine.IndexedHash()
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(ReplicaState{AppliedIndex: applied, StateIndex: index, Hash: hex.EncodeToString(hash[:])}); err != nil {
		n.log.Debug("replica state answer", "err", err)
	}
}
