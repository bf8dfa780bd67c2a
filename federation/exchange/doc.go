// Package exchange moves chat events between peers: the nodes of a cluster, and the federated
// servers the operator configured. It is the data plane, which stays out of the Raft log, and it
// owns what both kinds of peer share: the one allow-list of peers with their trust levels
// (allow.go), the one wire (a signed binary stream per peer, stream.go and frame.go, and its
// pull: messages, deletes and reactions travel nowhere else; a POST push carries only ephemeral
// TAGMSGs, status messages and operators' WALLOPS), the one outbox per peer over the origin's own durable logs, the
// one cursor scheme per (peer, log) (cursors.go), and the one inbound pipeline every peer's
// events go through (inbound.go: trust gate, acceptance rules, dedupe by msgid, store, Stored
// stream). A delete and a reaction are the store's types (eventstore.Deletion,
// eventstore.ReactionEvent) from the frame to the chat service. Linked-channel authority (the
// home rule, requests, presence) is federation/peering's, plugged in through Servers.
//
// How it works, and why it is built this way: DESIGN.md beside this file.
package exchange
