package fsm

// Events of the IRC conformance features: a session coming online (MONITOR), metadata changes
// (draft/metadata-2, metadata.go) and channel renames (draft/channel-rename, rename.go). Their
// numbers are spaced away from the list in result.go so that kinds added there never collide;
// kinds are never persisted.
const (
	// EvRegister: a session registered (Actor), on whichever node.
	EvRegister EventKind = 40 + iota
	// EvMetadata: a metadata key of a user (Target.DID) or channel (Channel) was set or cleared.
	EvMetadata
	// EvRename: a channel was renamed from OldChannel to Channel (folded names); Text is the
	// reason.
	EvRename
)
