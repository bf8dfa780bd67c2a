package features

import (
	_ "github.com/palaver-chat/palaver/raft/fsm/av"     // calls in channels
	_ "github.com/palaver-chat/palaver/raft/fsm/coord"  // coordination models
	_ "github.com/palaver-chat/palaver/raft/fsm/media"  // uploads, media key, pre-key bundles, group keys, media spaces
	_ "github.com/palaver-chat/palaver/raft/fsm/meta"   // user and channel metadata
	_ "github.com/palaver-chat/palaver/raft/fsm/rejoin" // channels an account rejoins at login
)
