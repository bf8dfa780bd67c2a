package node

import (
	"net/http"
	"time"

	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/stream"
	"github.com/palaver-chat/palaver/raft"
)

// Faults injects network and disk faults into a node, for the testcluster harness. Config.Faults
// is nil in production: the node then uses the real network and disk, and nothing here runs.
type Faults struct {
	// Network replaces the node's Raft transport, gossip and cluster listener with in-process
	// links that can be cut and healed between pairs of nodes (raft.InmemNetwork.Partition). The
	// event exchange runs on the cluster listener's HTTP plane, over the same links, so a
	// partition cuts it too. Every node of the cluster must use the same one. Storage stays on
	// disk in DataDir; the cluster planes still run over mutual TLS.
	Network *raft.InmemNetwork
	// LogWriteDelay, when set, delays every Raft log write by its answer: a slow disk.
	LogWriteDelay func() time.Duration
	// PanicAt, when set, is asked at the points panics.go names and makes the code there panic
	// when it answers true: a bug, for the tests that show a panic ends only what it should.
	PanicAt func(point string) bool
}

// faults is the one way Start asks for injected faults: each method is asked once, by the step
// that builds the part it names, and hands back that part's hooks or the part with the faults in.
// noFaults, the production one, hands back no hooks and the parts as they were given.
type faults interface {
	// raft is the network and the log's write delay of Raft (nil, nil: the real ones).
	raft() (*raft.InmemNetwork, func() time.Duration)
	// streams are the hooks run before each delivery of the Applied and Stored streams.
	streams() (applied func(string, stream.Entry), stored func(string, stream.Item))
	// history is the event store as the chat service writes it and the IRC edge reads it.
	history(*eventstore.Store) eventHistory
	// exchange is the event exchange's client and the hook run before each frame it sends.
	exchange(*http.Client) (*http.Client, func())
	// federation is federation's client.
	federation(*http.Client) *http.Client
	// injected reports whether faults are injected at all (the poison fault runs only then).
	injected() bool
}

// inject is the node's faults: noFaults without any.
func (f *Faults) inject() faults {
	if f == nil {
		return noFaults{}
	}
	return f
}

// noFaults injects nothing.
type noFaults struct{}

func (noFaults) raft() (*raft.InmemNetwork, func() time.Duration)                 { return nil, nil }
func (noFaults) streams() (func(string, stream.Entry), func(string, stream.Item)) { return nil, nil }
func (noFaults) history(h *eventstore.Store) eventHistory                         { return h }
func (noFaults) exchange(c *http.Client) (*http.Client, func())                   { return c, nil }
func (noFaults) federation(c *http.Client) *http.Client                           { return c }
func (noFaults) injected() bool                                                   { return false }

func (f *Faults) raft() (*raft.InmemNetwork, func() time.Duration) { return f.Network, f.LogWriteDelay }

func (f *Faults) injected() bool { return true }
