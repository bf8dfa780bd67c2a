// Package meta is the replicated state machine's module of metadata (IRCv3 draft/metadata-2 and
// draft/metadata-3): key/value pairs on users and channels, replicated so that every node answers
// METADATA GET and LIST alike and renders changes to its own sessions. Subscriptions belong to a
// connection and stay in the gateway.
//
// A user's metadata belongs to its DID (profile data such as avatar, display-name or homepage
// outlives a connection and is shared by the DID's sessions); a guest's belongs to its session
// and ends with it. A channel's belongs to the channel (by folded name), follows it when it is
// renamed and is deleted with it. Only the user itself sets its own keys; a channel's keys are
// set by its operators.
//
// The package owns that state (the snapshot section "metadata"), its command types (33, 34),
// result codes (25–27), event kind (41, whose Event.Payload is a []Change) and the read view Of;
// it follows sessions and channels through the core's lifecycle hooks, and registers itself with
// the core (fsm.Register) when the package loads.
package meta
