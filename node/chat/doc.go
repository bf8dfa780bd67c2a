// Package chat owns the writing of chat events and the rules they meet, once for every surface.
//
// Service is the one path by which a message, edit, delete or reaction is written. A local
// sender's event goes through Prepare (the send rules of Check, the msgid chosen or adopted,
// the reference of an edit, delete or reaction resolved to its root, authorship, the signature
// kept, refused or made with the server key) and Commit (stored durably — a connection's
// messages in one commit — then published on the Stored stream, never before); Send, Edit,
// Delete, React and SendAsNode are built on them. Events made elsewhere, on another node of the
// cluster or on a federated server, go through AcceptRemote: deduplicated by msgid, checked by
// the acceptance rules (AcceptEdit, AcceptDeletion, AcceptReaction, IsAuthor), stored in one
// commit, and published with their source. eventstore.Message, eventstore.Deletion and
// eventstore.ReactionEvent are the one type of a message, a delete and a reaction for the
// service, its acceptance rules and the store.
//
// A TAGMSG that carries a client tag of Config.PersistTags (+draft/persist, +persist by default)
// is kept: stored and exchanged as a message row of its venue, an event that only
// draft/event-playback readers get back from history (eventstore.Playback); other TAGMSGs, but
// deletes and reactions, are relayed live only.
//
// The service also keeps, in memory, which stored messages have not reached this node's readers
// yet (delivery.go): a local write is delivered by Commit itself (Write.Deliver, then
// Write.AfterDeliver for a caller that sends several writes' lines together), a remote one
// once the Stored stream's subscribers have handled it. Each message is stored with the oldest
// seq of its venue still on its way then (eventstore.Message.ResumeFrom), where a reader that
// resumes after it starts (CHATHISTORY AFTER msgid=, eventstore.Store.ResumeAfter).
//
// Check also answers "would it be accepted?" without sending, for tools that advise a sender.
// The IRC edge keeps the protocol (parsing, capabilities, the per-connection pipeline, numerics,
// rendering); the exchange and federation keep their wire formats and transport.
//
// The package reads the replicated state through the small State interface and the event store
// through Store; it imports no gateway and no federation transport.
package chat
