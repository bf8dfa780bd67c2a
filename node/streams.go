package node

import (
	"context"

	"github.com/palaver-chat/palaver/node/stream"
	"github.com/palaver-chat/palaver/raft/fsm"
	_ "github.com/palaver-chat/palaver/raft/fsm/features" // every replicated feature module
)

// openStreams builds the state machine and the node's streams, and makes the machine publish
// every applied entry (and every snapshot restore) into the Applied stream. It comes first, so
// that surfaces built later subscribe in their constructors before the node serves.
func (n *Node) openStreams(context.Context) error {
	n.machine = fsm.New(n.log)
	n.machine.SetLocalNode(n.cfg.NodeName)
	log := n.log.With("component", "stream")
	n.streams = &stream.Streams{
		Applied: stream.NewApplied(stream.AppliedOptions{Logger: log, BeforeDeliver: n.cfg.Faults.beforeApplied()}),
		Stored:  stream.NewStored(stream.StoredOptions{Logger: log, BeforeDeliver: n.cfg.Faults.beforeStored()}),
	}
	n.machine.SetObserver(n.streams.Applied.Publish)
	n.machine.SetRestoreObserver(n.streams.Applied.Restored)
	return nil
}
