// Package fsm owns Palaver's replicated control plane: the deterministic state machine (Machine)
// that Raft drives, and the core of its state. The core is sessions and the nicks they hold, nick
// ownership by DID, channels with their members, modes, topics, ban, ban-exception and
// invite-exception lists, invites and pins, DID operators and founders, public signing keys, and
// small per-DID settings (favourites, read markers, real names, client passwords).
//
// A replicated feature beyond the core is a module: a package under raft/fsm that owns its state
// (a Section of the State, one section of every snapshot), its command numbers, its result codes,
// its events and a typed read view, and registers them with Register when it loads; lifecycle
// hooks keep it in step with the core (a session ended, a channel deleted or renamed). The
// coordination models are raft/fsm/coord, media and keys raft/fsm/media, calls raft/fsm/av,
// users' and channels' metadata raft/fsm/meta. Package raft/fsm/features links every module into
// the node; a new replicated feature is its own package plus one line there:
//
//	_ "github.com/palaver-chat/palaver/raft/fsm/coord"
//
// Readers use the State's read API, the small typed views (Diagnose, LoginsOf) and each module's
// view (coord.Of, media.Of, av.Of, meta.Of) under Machine.Read. How it works and why: DESIGN.md.
package fsm
