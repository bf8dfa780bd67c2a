// Package stream owns the node's two named streams, the seams every surface plugs into:
//
//   - Applied: every applied Raft entry's events, in log order, after this node applied it; a
//     snapshot restore (or a subscriber that fell too far behind) is delivered as a resync.
//   - Stored: messages, edits, deletes and reactions this node stored durably (from its own
//     clients, from cluster peers and from federated servers alike), published after the durable
//     commit, plus the live-only TAGMSGs, status messages and WALLOPS relayed without storing
//     (Ephemeral).
//
// A surface subscribes from its own constructor with Subscribe(name, mode, fn). Each subscriber
// has its own bounded queue and goroutine, so a slow subscriber never stalls Raft's apply loop or
// the other subscribers, except by the contract it chose:
//
//   - Backpressure: the publisher waits while the subscriber's queue is full. Nothing is dropped
//     or reordered. For the IRC render and delivery (a lost line is a lost message), and for
//     federation's view of state changes. On Applied, proposers also wait until every
//     Backpressure subscriber handled their entry (WaitRendered).
//   - DropAndResync: when the queue is full, what it holds is dropped and replaced by one gap
//     marker (an Entry with Resync set at the newest index, or an Item with Gap set); the
//     subscriber rebuilds what it keeps from the state or the durable log. For surfaces whose
//     views can be rebuilt (media, coordination, AV, outboxes that catch up by pulling).
//
// A panic in a subscriber's function is logged with its stack; the subscriber is then handed a
// gap marker (it rebuilds) and keeps running. Values are shared between subscribers: a
// subscriber must not modify what it is given.
//
// The package is a leaf: it imports only raft/fsm and node/eventstore, so gateways and
// federation subscribe without importing the node.
package stream
