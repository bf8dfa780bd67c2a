// Package fsm owns Palaver's replicated control-plane state and the deterministic state machine that
// changes it: sessions and the nicks they hold, nick ownership by DID, channels with their members,
// modes, topics, ban, ban-exception and invite-exception lists, invites, DID operators and
// founders, and small per-DID settings such as favourites.
//
// Every change is a Command proposed through Raft (package raft owns *raft.Raft; this package never
// imports it). Apply is deterministic: it reads no clock, draws no randomness and does no I/O. The
// proposer stamps the time, the request id and every generated name (a guest's replacement nick, a
// session id) into the command, and folds names to their canonical case before proposing. A command
// whose request id was already applied returns the recorded result without changing anything again,
// so a retried proposal is applied once.
//
// Apply checks privileges against the replicated state, applies the permitted part of a command,
// returns a Result whose Code maps to an IRC numeric or an HTTP status, and hands Events to an
// observer after the state lock is released. Each node's gateways turn those events into lines for
// their own local sessions, which is how a change proposed on one node reaches members on every node.
//
// Other packages read the state only through its read API (view.go), under Machine.Read: methods
// that answer questions (a channel and its members, the access rule MayRead, a DID's keys and
// sessions, a nick's owner, the members of a channel on this node) and iterators that walk the
// maps in place. State's maps, and those of Channel, Session and RemoteMember, are unexported, so
// nothing outside this package indexes or changes them. The members on this node come from an
// index Apply keeps (Machine.SetLocalNode names the node); it is derived, never encoded. Tests of
// other packages build states with Fixture or drive a Machine with package fsmtest.
//
// Snapshots are the JSON encoding of the whole State through its wire types (wire.go: the same
// names and order as when the fields were exported; maps encode with sorted keys, so two machines
// that applied the same log produce the same bytes and the same Hash). Restore builds a fresh State
// and swaps it in: it replaces, never merges.
//
// Command type bytes are persisted in the Raft log, and result codes in snapshots: both have
// explicit numbers, the command types in one registration table (commands, in commands.go; a
// command defined elsewhere registers with registerCommands). Never renumber or reuse either. An
// entry of a command type this build does not know stops the node with a panic naming the type
// (unless the writer marked it ignorable): skipping it would let this replica diverge silently
// from the nodes that applied it, so the fix is to upgrade the node. An entry of a known type
// that does not decode is answered ErrInvalid and changes nothing. So that no node meets such an
// entry during a rolling upgrade, every command type has a feature level (levels.go), and the
// proposer holds back a command above the level of a server of an earlier version.
//
// A DID costs nothing to mint, so what a DID leaves in the state after its sessions end is bounded
// per DID (limits.go): one owned nick, MaxFoundedPerDID founded channels, MaxSessionKeysPerDID
// session keys, MaxFavorites favourites; and empty channels expire through ExpireChannels, which
// the leader proposes periodically with the expiries from its configuration (Apply compares the
// stamped time with the time each channel was left empty; it reads no clock).
//
// A channel has an incarnation (Channel.Incarnation), named from the log index and time of the
// entry that created it: a channel deleted and created again under the same name is a new
// incarnation, which is how the event store keeps an earlier channel's restricted history from
// its successor (MessageVisible).
package fsm
