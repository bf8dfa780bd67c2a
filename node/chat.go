package node

import (
	"context"

	"github.com/palaver-chat/palaver/node/chat"
)

// startChat builds the chat service: the one path by which this node's clients' messages, edits,
// deletes and reactions are checked, signed, stored and published, and by which events made on
// other nodes and federated servers are accepted (the IRC edge and the exchange call it).
func (n *Node) startChat(context.Context) error {
	n.chat = chat.New(chat.Config{
		State: n.machine, Store: n.cfg.Faults.ircHistory(n.events), Key: n.serverKey, Stored: n.streams.Stored,
		NodeName: n.cfg.NodeName, Logger: n.log.With("component", "chat"),
	})
	return nil
}
