package irc

import (
	"fmt"

	"github.com/palaver-chat/palaver/node/stream"
)

// subscribe makes the edge a subscriber of the node's streams: applied entries are rendered for
// local sessions (Observe, Resync), and chat events stored from cluster peers and federated
// servers are delivered to local members (DeliverRemote, DeliverDeletion, DeliverReaction). Both
// are Backpressure subscribers: a lost line is a lost message, and proposers wait for the render.
func (s *Server) subscribe(st *stream.Streams) error {
	if st == nil {
		return nil
	}
	if err := st.Applied.Subscribe("irc", stream.Backpressure, func(e stream.Entry) {
		if e.Resync {
			s.Resync()
			return
		}
		s.Observe(e.Events)
	}); err != nil {
		return fmt.Errorf("irc: %w", err)
	}
	if err := st.Stored.Subscribe("irc", stream.Backpressure, s.deliverStored, stream.Cluster, stream.Federation); err != nil {
		return fmt.Errorf("irc: %w", err)
	}
	return nil
}

// deliverStored shows local members a chat event stored from elsewhere, and local +w users a
// WALLOPS relayed by another node of the cluster (wallops.go). A gap needs nothing: live lines
// already lost are in history.
func (s *Server) deliverStored(it stream.Item) {
	switch it.Kind {
	case stream.KindMessage, stream.KindEphemeral:
		if it.Message.Command == wallopsCommand {
			if it.Kind == stream.KindEphemeral && it.Source == stream.Cluster { // never from another server
				s.deliverWallops(*it.Message, nil)
			}
			return
		}
		s.DeliverRemote(*it.Message)
	case stream.KindDeletion:
		s.DeliverDeletion(*it.Deletion)
	case stream.KindReaction:
		s.DeliverReaction(*it.Reaction)
	}
}
