package node

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/palaver-chat/palaver/gateway/metrics"
	"github.com/palaver-chat/palaver/raft"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// newPprof builds the server of the runtime profiles (net/http/pprof), the replica's state
// (/debug/palaver/state) and every metric (/metrics; the public port's /metrics leaves out the
// families that map the deployment), on their own listener, never on the public HTTP server:
// --pprof-addr is for operators, benchmarks and test harnesses, and should name a loopback address.
func newPprof(addr string, log *slog.Logger, mset *metrics.Set, rf *raft.Store, machine *fsm.Machine) (*http.Server, net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("pprof listener %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("GET /debug/palaver/state", replicaState{rf, machine, log})
	mux.Handle("GET /metrics", mset.Handler())
	log.Info("serving runtime profiles", "addr", ln.Addr().String())
	return &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln, nil
}

// ReplicaState is what /debug/palaver/state answers: enough for a harness to compare the replicas
// of nodes running as separate processes.
type ReplicaState struct {
	AppliedIndex uint64 `json:"applied_index"` // Raft index applied (commands and configuration entries)
	StateIndex   uint64 `json:"state_index"`   // index of the last entry applied to the hashed state
	Hash         string `json:"hash"`          // hex SHA-256 of the state's snapshot encoding
}

// replicaState answers the replica's indexes and state hash, computed for this request: the
// hash encodes the whole state under its read lock, so it is served here, on demand, and never
// as a metric a monitoring system would scrape.
type replicaState struct {
	raft    *raft.Store
	machine *fsm.Machine
	log     *slog.Logger
}

func (s replicaState) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	applied := s.raft.Status().AppliedIndex
	index, hash := s.machine.IndexedHash()
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(ReplicaState{AppliedIndex: applied, StateIndex: index, Hash: hex.EncodeToString(hash[:])}); err != nil {
		s.log.Debug("replica state answer", "err", err)
	}
}
