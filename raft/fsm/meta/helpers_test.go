package meta

import (
	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

// Test identities shared by the Apply tables.
const (
	didAlice = "did:plc:alice"
	didBob   = "did:plc:bob"
)

// world is the sessions the tables start from: alice and bob with DIDs, a guest and an operator.
func world() []fsm.Command { return fsmtest.World(didAlice, didBob) }
