// Package peering owns federation between independent Palaver servers: the configured servers of
// the exchange's allow-list (exchange.AllowList, with their trust levels), the channels linked
// with each, the rules that say which of this node's rows go to which server, the checks that
// keep a lying peer from changing anything it has no right to, the peers' server keys, and the
// authority plug-in (linked channels' state, requests and answers, presence) with its signed
// envelopes. The rows themselves travel on the exchange's stream: Federation is the exchange's
// Servers plug-in (plane.go).
//
// # Identity and keys
//
// A server is did:web:<server-name>; every node of a cluster shares the server name, and the
// did:web document any node serves lists the server keys of all nodes of the cluster (they are
// in the replicated key registry). A peer's keys are read only from its did:web document at the
// base URL the operator configured for it (never from a URL found on the wire), through the
// SSRF-guarded client (which reaches private and loopback addresses only when the operator
// allowed it, --peer-allow-private); a key is filed under the kid it hashes to (signing.KID), so
// a document can never make a kid name another key. A peer's document is read at most once per
// 10 s whatever kids its envelopes name; a user key the peer did not have is not asked for again
// within PeerKeyRetry (at most 4,096 such misses are remembered), and each peer is asked for its
// users' keys at most 20 times at once and once a second after that. Every key that verified an
// envelope, a stream request or a relayed message is registered through Raft with source
// "origin-server", so /api/v1/verify on any node of this cluster answers valid with key_source
// origin-server.
//
// # The stream
//
// What a node originates (messages and edits, deletes, reactions) goes to each configured
// server on the exchange's stream (federation/exchange: GET /federation/v1/stream on the public
// HTTP plane, one long-lived connection per peer, binary frames signed once each), the same
// stream and outbox the nodes of a cluster use. Federation plugs in as exchange.Servers: Routes
// names every configured server and its stream's address (readonly ones too: they receive);
// DueMessage, DueDeletion and DueReaction say which rows of this node go to a server (a channel
// linked with it, or a DM with one of its users; not relayed from a peer; not older than
// CatchUpWindow; no TAGMSG among messages); AuthenticateStream checks the stream request's
// signature headers (exchange.VerifyRequest) with the keys of the signer's did:web document,
// read through the peer key cache, before anything of the stream is read: a signer that is not a
// configured peer or is readonly is refused 403, an unknown kid or a bad signature 401;
// ReceiveFrame applies a frame's items (Inbound); StreamUp and StreamDown are the link's state.
//
// # Envelopes
//
// POST /federation/v1/events carries the authority plug-in's traffic: topics, mode and other
// state changes (the home's snapshot when the link comes up, then its changes), requests to the
// home and the answers to them, and presence (with its snapshot). Each is a Palaver-Envelope
// header (EnvelopeHeader: the signer, the SHA-256 of the body and the signer's server-key
// signature over both) and one Envelope. The
// receiver checks the header first, before it reads any of the body: an unknown signer, a kid
// not in its document or a signature that does not verify is refused at once, so no one but a
// configured peer can make it read a body (at most MaxEnvelopeBytes, within the HTTP server's
// ReadTimeout), which must then match the signed digest. Refusals are the Error object of the
// HTTP API with a federation code (Refusal). The Envelope is {signer, payload, signature}: payload is the
// base64url JSON of a Batch, signature is "ed25519:<kid>:<sig over "palaver federation batch
// v1\n" and the payload bytes>" (a signature over the bare payload is still accepted) by the
// sending node's server key. The receiver refuses (and changes nothing) when the signer is not a
// configured peer, the kid is not in that peer's document, the signature does not verify, the
// batch's from/to do not name the signer and this server, its date is more than five minutes
// off, or its sequence is not greater than the last accepted from the same signing key (a replay
// or an out-of-order envelope; the error carries the last sequence so an honest sender can jump
// past it). Sequences are per signing key because each node of a cluster sends its own envelopes.
// A Batch carries at most 100 items, each list with its own share so that none starves the others.
//
// An envelope may still carry messages, edits, deletes and reactions, and the receiver still
// accepts them, through the very same checks and pipeline as a stream frame's (applyItems: one
// implementation) and under the peer's one rate limit. That is for peers of an earlier version,
// whose outbox still posts them: refusing them would refuse that peer's whole envelope, its
// topics, requests and presence with it. This node's outbox never sends them (the stream does).
//
// # Outboxes and catch-up
//
// Every node sends the rows it originated (each node's event store is its outbox, as inside a
// cluster) on its own stream to each server, from the sender-held cursors out:messages:<peer>,
// out:deletes:<peer> and out:reactions:<peer> (the cursors the envelope outbox advanced before,
// so an upgraded node continues where it stopped). A cursor advances only over what the server
// acknowledged after its durable commit, so nothing is lost when a link drops; the receiver
// drops duplicate msgids, so nothing is delivered twice. An edit or delete whose root is not
// stored yet waits: ReceiveFrame's Taken stops its list there, and the sender's cursor stays
// before it. Catch-up is bounded: events older than CatchUpWindow (a day by default) are not
// sent. The exact stored text and tags travel, signature included, and are re-verified on arrival.
// (Sending from the node that originated an event, rather than from one leader, is what makes
// deletes travel: a node's deletions log holds only the deletes made on that node.)
//
// Peering's own outbox per peer carries only the envelopes above. It never polls: it sends when
// something is queued, or when the stream comes up (StreamUp: the snapshots), and retries a
// failed envelope with a capped backoff (SendEvery, doubling up to ten times it). It sends no
// keepalive: the stream's heartbeat shows a dead link. State changes and presence wait in
// memory, and what a restart loses of them comes back with the snapshots sent at link up.
//
// # Inbound
//
// Any node accepts a server's stream and its envelopes. A stream frame is first paced: each peer
// may send at most 100 items a second (a token bucket shared with its envelopes), and a frame
// that would exceed it waits for its tokens before anything of it is applied; the sender waits
// for the acknowledgement, so a flood slows that server's own stream only (an envelope over the
// limit is refused whole, 429). Each item then passes peering's checks (its link or DM,
// impostors, signatures, trust, sanitising) and goes through the inbound pipeline the cluster's
// exchange uses too (exchange.Pipeline: the trust gate, then the chat service's AcceptRemote with
// peering's Authority: acceptance rules, dedupe by msgid, store, Stored). An accepted event is
// stored with its original msgid and tags
// (+freeq.at/sig intact) plus +freeq.at/origin=<peer server name>, as an event this node
// originated, so the intra-cluster exchange spreads it to the other nodes; the origin tag keeps
// where it came from recoverable. Events that came from a peer are never sent on to any peer.
//
// # Authority for a linked channel's state
//
// The home of a linked channel is the server whose DID sorts lowest (bytewise) of the two. Both
// servers compute the same answer from configuration alone, so it never flaps and both sides
// cannot both hold ops. The home decides the channel's shared state: its topic, the flags i, t, n,
// m, the ban and invite-exception lists, and its pins. A change made on the home by one of its
// sessions is sent to the other side (Topic, Change), which applies it only when the actor is an
// operator in its own state (on a -t channel, anyone may set the topic). When a link comes up the
// home sends its topics and, marked Sync, its flags and bans: a sync needs no actor and only ever
// adds, so it never weakens +n/+i/+t/+m.
//
// On the other side a session's TOPIC, MODE (of those modes), PIN or UNPIN is never applied
// locally first: the IRC edge checks the actor against local state and then RequestTopic or
// RequestChange sends it to the home and waits for the envelope's acknowledgement. The home
// applies it if the actor is an operator in the home's state (for a topic: if the channel is +t),
// reports a refusal in the Ack (Ack.Refused, by request id: the client gets 482 or FAIL REFUSED),
// and sends the change back as its own. A request whose envelope fails is dropped and reported as
// ErrLinkDown (FAIL TEMPORARILY_UNAVAILABLE): nothing changes, and it is never applied late. A
// request made while the node's last attempt to reach the home failed is refused at once; one made
// before the node's first attempt since it started has finished waits for that attempt.
//
// The home's answer names one of the requesting server's users, which a home may not otherwise
// do: it is accepted on that ground only when it carries a request this server made. The request
// id is a ULID (it dates itself) and the requesting node signs the request's fields with its
// server key (RequestSig); any node of the requesting cluster checks that signature against the
// cluster's server keys in the replicated registry, accepts each request id once per node, and
// only within ten minutes. A home therefore cannot attribute a change to a local user that the
// user did not ask for, nor replay an old answer.
//
// Operators are each server's own: ops (o, including "MODE #chan +o did:..." for a DID with no
// session here, which is how each side comes to trust the other's operators), h, v, +k and +E never
// cross. A KICK or INVITE of a user of the peer (ActOnRemote) goes to that user's server, whichever
// side is the home, and is applied there when the actor is an operator there.
//
// # Reactions
//
// A react or unreact made on a node crosses as the TAGMSG its author sent, signature included
// (Reaction). The event store files every reaction in an origin-ordered reaction log
// (Store.FileReaction); the stream sends the ones made on its node from that log after the
// durable cursor out:reactions:<peer>, so a reaction survives a failed send or a restart as a
// message does. The receiver files it for a root it holds in that
// channel only with the reactor's valid signature: the reactor's own key, or a key the peer
// vouches for when the reactor is not known here from anywhere else. It files it in its own
// reaction log (with the origin tag, so it is never sent on to a peer) and shows it to its
// members; the other nodes of its cluster copy it from that log and show it to theirs.
//
// # Direct messages
//
// A DM (venue dm:<didA>,<didB>) that a user of this server sent crosses, with its edits and
// deletes, as a message does, to the peer whose user the other party is: a user that peer has
// shown present in a linked channel. A DM from a peer is accepted only for a user of this server
// (a session here or a session key registered here), from a sender the venue names, and never
// from a sender who is a user of this server (dm.go).
//
// # Presence
//
// Each node sends the joins, parts, kicks, quits and nick changes of its own sessions in linked
// channels, and any node sends a snapshot of the whole cluster's members of each linked channel
// when its stream comes up or the peer asks (Batch.WantPresence). The receiving node spreads a
// peer's presence to the rest of its cluster through Raft (fsm.RemotePresence): it is small, it
// has to be in the state every node reads for NAMES, WHO and WHOIS anyway, and the check against
// the channel's bans (+b mask or +b did:...) then happens in the same deterministic step. When a
// node's link drops (its stream to the peer fails or cannot be opened: StreamDown) it forgets the
// peer's members cluster-wide, fails the requests waiting for the home, and asks for the members
// again with its next envelope; a node that starts asks too.
//
// # Lying peers
//
// Peers are never trusted with privileges: is_op is never on the wire; a state change is applied
// only when the actor is an operator (founder or DID op) in local state, or answers a request
// this server signed; an edit or delete must
// come from the root's author (or, for a delete, a local operator) and carry that DID's valid
// signature — a key filed here under that DID, or the peer's server key only for messages that
// came from that same peer; a relayed signature that is invalid drops the event, one that cannot
// be checked is relayed intact; a reaction needs the reactor's valid signature; a peer cannot
// speak, react, act or be present as a DID or nick that has a session here, nor send a DM as
// any user of this server; strings are sanitised
// (\r, \n and NUL removed, lengths capped); each peer may send at most 100 items a second (its
// stream waits; a larger envelope is refused whole); trust levels hold: "relay" peers may send
// messages, edits, deletes, reactions and presence but no state changes, "readonly" peers may
// originate nothing (their stream is refused, as is an envelope of theirs that carries anything).
//
// # Panics
//
// A panic in federation's loops does not end the process: it is logged with its stack and the
// loop goes on. An outbox round (collecting and sending an envelope) that panicked counts as a
// failed round and is retried with the outbox's capped backoff; an inbound item whose apply (or
// delivery to local sessions) panicked is skipped: dropped as "internal-error", taken, and the
// rest of its envelope or frame applied.
package peering
