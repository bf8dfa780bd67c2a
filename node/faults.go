package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/palaver-chat/palaver/raft"
)

// Faults injects network and disk faults into a node, for the testcluster harness. Config.Faults
// is nil in production: the node then uses the real network and disk, and nothing here runs.
type Faults struct {
	// Network replaces the node's Raft transport, gossip and cluster RPC with in-process links
	// that can be cut and healed between pairs of nodes (raft.InmemNetwork.Partition). Every node
	// of the cluster must use the same one. Storage stays on disk in DataDir.
	Network *raft.InmemNetwork
	// Reachable, when set, is asked before every event-exchange request this node makes, with
	// the request's host:port; false fails the request as a cut link would, so a partition
	// covers the data plane too.
	Reachable func(hostport string) bool
	// LogWriteDelay, when set, delays every Raft log write by its answer: a slow disk.
	LogWriteDelay func() time.Duration
	// PanicAt, when set, is asked at the points panics.go names and makes the code there panic
	// when it answers true: a bug, for the tests that show a panic ends only what it should.
	PanicAt func(point string) bool
}

// ErrUnreachable is the error of an event-exchange request across a cut link.
var ErrUnreachable = errors.New("node: fault injection: host unreachable")

func (f *Faults) network() *raft.InmemNetwork {
	if f == nil {
		return nil
	}
	return f.Network
}

func (f *Faults) logWriteDelay() func() time.Duration {
	if f == nil {
		return nil
	}
	return f.LogWriteDelay
}

// exchangeClient is the event exchange's HTTP client: nil (the exchange's default) unless
// Reachable is set.
func (f *Faults) exchangeClient() *http.Client {
	if f == nil || f.Reachable == nil {
		return nil
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &cuttableTransport{base: http.DefaultTransport, reachable: f.Reachable}}
}

// cuttableTransport refuses requests to destinations Reachable says are cut off.
type cuttableTransport struct {
	base      http.RoundTripper
	reachable func(hostport string) bool
}

func (t *cuttableTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.reachable(req.URL.Host) {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Host, ErrUnreachable)
	}
	return t.base.RoundTrip(req)
}

// TransferLeadership hands Raft leadership from this node, which must lead, to another voter
// (see raft.Store.TransferLeadership).
func (n *Node) TransferLeadership(ctx context.Context) error {
	if err := n.raft.TransferLeadership(ctx); err != nil {
		return fmt.Errorf("node %s: %w", n.cfg.NodeName, err)
	}
	return nil
}

// stateHash48 is the first 48 bits of the replicated state's hash, exact in a float64: the
// palaver_state_hash48 gauge, which lets a harness compare replicas of nodes running as separate
// processes.
func (n *Node) stateHash48() float64 {
	h := n.machine.Hash()
	var v uint64
	for _, b := range h[:6] {
		v = v<<8 | uint64(b)
	}
	return float64(v)
}
