// Package features links every replicated feature module into the state machine. A module
// registers itself with fsm.Register when its package loads; importing it here, one line, makes
// every node apply its commands and carry its section in snapshots whether or not a gateway of
// the build uses it. Whatever builds a Machine that applies a real log imports this package.
package features

import (
	_ "github.com/palaver-chat/palaver/raft/fsm/av"    // calls in channels
	_ "github.com/palaver-chat/palaver/raft/fsm/coord" // coordination models
	_ "github.com/palaver-chat/palaver/raft/fsm/media" // uploads, media key, pre-key bundles, group keys, media spaces
	_ "github.com/palaver-chat/palaver/raft/fsm/meta"  // user and channel metadata
)
