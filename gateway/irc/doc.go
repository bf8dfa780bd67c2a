// Package irc owns Palaver's IRC edge: one handler for every transport (TCP, TLS, WebSocket), client
// registration and capability negotiation, SASL sessions (ATPROTO-CHALLENGE, and PLAIN or
// SCRAM-SHA-256 with a DID's client passwords: PASSWORD in logins.go) and bearer tokens, hosted
// accounts (REGISTER, register.go; with e-mail verification, VERIFY and the codes awaiting it,
// verify.go), the channels an account rejoins at login (rejoin.go), the command table, channel and
// private messaging, CHATHISTORY, and rendering replicated state changes into lines for the
// sessions connected to this node.
//
// Shared state (nicks, sessions, channels, modes, topics, lists) is never changed here directly:
// handlers validate syntax, read the local replica, and propose fsm commands through a Proposer.
// They answer after the local state machine applied the command; the state machine's events come
// back through Server.Observe and are rendered for every local session they concern, which is also
// how changes made on other nodes reach local users. On a channel linked with a peer server,
// linked-channel routing (node/linkroute, through Config.Links) says which changes go to the
// channel's home server instead. Chat messages stay out of Raft and are not
// written here: the chat service (node/chat, through the Messages interface) checks them, picks
// or adopts their msgid, signs, stores them durably and publishes them, and only then does the
// edge echo and deliver them, in the connection's command order (pipeline.go). Read markers and
// real names are replicated (fsm.SetReadMarker, fsm.SetRealname); WHOWAS is a bounded per-node
// history, the same on every node because every node renders every session's end. STATUSMSG
// (`PRIVMSG @#chan`) is live only: never stored, relayed to the other nodes as an ephemeral event
// and shown only to the members with that prefix or a higher one (statusmsg.go). An operator's
// WALLOPS travels the same way to the users with user mode +w of every node (wallops.go); LINKS
// lists this server and the other nodes of its cluster (links.go). Channel events
// (JOIN, PART, MODE, ...) are filed from the applied log on every node and replayed to
// draft/event-playback clients within their history (playback.go), as are the TAGMSGs the chat
// service keeps (those carrying a tag of the node's persist list, +draft/persist by default),
// which the edge reads through eventstore.Playback; other readers never get them.
//
// How it works, and why it is built this way: DESIGN.md beside this file.
package irc
