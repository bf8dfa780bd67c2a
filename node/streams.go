package node

import (
	"log/slog"

	"github.com/palaver-chat/palaver/node/stream"
	"github.com/palaver-chat/palaver/raft/fsm"
	_ "github.com/palaver-chat/palaver/raft/fsm/features" // every replicated feature module
)

// newStreams builds the node's streams and makes the machine publish every applied entry (and
// every snapshot restore) into the Applied stream. They come before any surface, so that surfaces
// built later subscribe in their constructors before the node serves.
func newStreams(machine *fsm.Machine, log *slog.Logger, fl faults) *stream.Streams {
	log = log.With("component", "stream")
	beforeApplied, beforeStored := fl.streams()
	streams := &stream.Streams{
		Applied: stream.NewApplied(stream.AppliedOptions{Logger: log, BeforeDeliver: beforeApplied}),
		Stored:  stream.NewStored(stream.StoredOptions{Logger: log, BeforeDeliver: beforeStored}),
	}
	machine.SetObserver(streams.Applied.Publish)
	machine.SetRestoreObserver(streams.Applied.Restored)
	return streams
}
