package testcluster

import (
	"context"
	"errors"

	"github.com/palaver-chat/palaver/node"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// instance is one running node: in this process (inProcess) or a separate `palaver serve`
// process (process).
type instance interface {
	// inProcess is the node when it runs in this process, nil for a process.
	inProcess() *node.Node
	// role is the node's Raft role ("leader", "follower", ...), "" when it cannot be read.
	role() string
	// state reads the node's applied index and state hash.
	state(ctx context.Context) (NodeState, error)
	// stop ends the node: node.Close in this process, kill -9 for a process.
	stop() error
}

// inProcess is a node started with node.Start in this process.
type inProcessNode struct{ n *node.Node }

func (p inProcessNode) inProcess() *node.Node { return p.n }
func (p inProcessNode) role() string          { return p.n.RaftStatus().Role }
func (p inProcessNode) stop() error           { return p.n.Close() }

func (p inProcessNode) state(context.Context) (NodeState, error) {
	st := NodeState{AppliedIndex: p.n.RaftStatus().AppliedIndex, Hash: p.n.Machine().Hash()}
	p.n.Machine().Read(func(s *fsm.State) { st.StateIndex = s.Index() })
	return st, nil
}

// errNotInProcess is returned by operations that need the node in this process (fault injection
// through the in-process network, leadership transfer, slow disk).
var errNotInProcess = errors.New("testcluster: the nodes run as separate processes; this fault needs them in-process")
