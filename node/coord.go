package node

import (
	"fmt"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/gateway/coord"
)

// mountCoord builds the coordination surface (ACT actions, tasks, manifests, spawned agents,
// capabilities, approvals, actor records, the audit timeline) and mounts its routes. Its models
// are replicated state, so every node answers the same; confirm receipts are signed with this
// node's server key, which never leaves it.
func (n *Node) mountCoord(prop *proposer) error {
	n.coord = coord.New(coord.Config{
		Options: n.cfg.Coord, State: n.machine, Proposer: prop, ServerDID: n.ServerDID(), ServerKey: n.serverKey,
		NewID: func() string { return ulid.Make().String() }, Logger: n.log.With("component", "coord"),
	})
	if err := n.coord.Mount(n.rest); err != nil {
		return fmt.Errorf("coordination: %w", err)
	}
	return nil
}
