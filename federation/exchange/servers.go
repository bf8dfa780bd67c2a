package exchange

import (
	"context"
	"crypto/ed25519"
	"net/http"
	"time"

	"github.com/palaver-chat/palaver/federation/eventstore"
)

// Configured servers share the stream with the nodes of the cluster: the same frames (frame.go),
// the same outbox per peer over this node's durable logs (stream.go), one cursor scheme. What
// differs is plugged in by federation/peering through Servers: which servers there are and how to
// reach them (Routes), which rows are due to each (Due*: linked channels and DMs, the catch-up
// window), who signed a stream request arriving on the public HTTP plane (AuthenticateStream),
// and the checks each item from a server meets before the inbound pipeline (ReceiveFrame: the
// home rule, impostors, signatures, the federation rate limit).
//
// The cursors of a server stream are held by the sender: out:<log>:<server DID>, advanced only
// over what the server acknowledged after its durable commit.

// ServerFrame is what one frame from a configured server carries, decoded.
type ServerFrame struct {
	Events    []Event    // messages and edits (wire.go), in the sender's seq order
	Deletions []Deletion // deletes made on the sending node, in their log's order
	Reactions []Reaction // reactions made on the sending node (reactions.go), in their log's order
}

// Taken is how much of each list of a ServerFrame the receiver took (applied, or passed over as a
// duplicate or refused item): the first Events events, and so on. A list stops short when an item
// waits (an edit or delete whose root is not stored yet): the sender keeps its cursor before it
// and sends it again later.
type Taken struct {
	Events, Deletions, Reactions int
}

// ServerRoute is a configured server this node streams its rows to.
type ServerRoute struct {
	DID       string       // did:web:<server name>
	StreamURL string       // <peer base URL>/federation/v1/stream
	Client    *http.Client // SSRF-guarded client for that peer
}

// Servers plugs the configured servers into the exchange (implemented by federation/peering).
type Servers interface {
	// Routes lists the servers this node sends to: every configured server, readonly ones too.
	Routes() []ServerRoute
	// DueMessage reports whether a row of this node is sent to server: a linked channel or a DM
	// with one of its users, no origin tag (it came from no peer), not older than the catch-up
	// window, not a TAGMSG. DueDeletion and DueReaction say the same of deletes and reactions.
	DueMessage(server string, m eventstore.Message) bool
	DueDeletion(server string, d eventstore.Deletion) bool
	DueReaction(server string, r eventstore.ReactionEvent) bool
	// AuthenticateStream names the configured server that signed a stream request arriving on
	// the public HTTP plane and the key that signed it, or refuses with an HTTP status (401 bad
	// signature or unknown kid, 403 not a configured peer or readonly). It runs before the
	// upgrade; VerifyRequest checks the signature headers.
	AuthenticateStream(r *http.Request) (server string, pub ed25519.PublicKey, status int, err error)
	// ReceiveFrame applies one frame from server (peering's checks per item, then the inbound
	// pipeline), pacing itself to the federation limit; it returns once what it took is durably
	// stored, with how much of each list it took. An error ends the stream.
	ReceiveFrame(ctx context.Context, server string, f ServerFrame) (Taken, error)
	// StreamUp: this node's stream to server is open. StreamDown: it failed or closed.
	StreamUp(server string)
	StreamDown(server string, err error)
}

// VerifyRequest checks the signature headers of an exchange request (Palaver-Node, Palaver-Date,
// Palaver-Signature over "<METHOD>\n<path?query>\n<date>\n<body>") with keys, and returns the
// signer's DID and the key that signed. A server's stream request is signed by the sending node's
// server key with the server's DID as signer (the kid names the node's key, which the server's
// did:web document lists).
func VerifyRequest(h http.Header, keys KeyLookup, method, pathQuery string, body []byte, now time.Time) (string, ed25519.PublicKey, error) {
	return verifyKey(h, keys, method, pathQuery, body, now)
}
