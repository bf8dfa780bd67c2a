package peering

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/palaver-chat/palaver/federation/exchange"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/signing"
)

// The data plane: what this node originates (messages and edits, deletes, reactions) travels to
// each configured server on the exchange's stream, the one outbox per peer over this node's
// durable logs, with the sender-held cursors out:<log>:<server DID>. Federation plugs into it as
// exchange.Servers: it names the servers and how to reach them (Routes), says which rows are due
// to each (Due*), authenticates a server's stream request (AuthenticateStream), applies each
// frame with the same checks as an envelope's items (ReceiveFrame), and keeps the link state from
// the stream (StreamUp, StreamDown).

// StreamPath is where a configured server's stream arrives, on the public HTTP plane.
const StreamPath = "/federation/v1/stream"

var _ exchange.Servers = (*Federation)(nil)

// Routes lists every configured server (readonly ones too: they receive, never send) with its
// stream's address and the SSRF-guarded client that reaches it.
func (f *Federation) Routes() []exchange.ServerRoute {
	out := make([]exchange.ServerRoute, 0, len(f.peers))
	for _, did := range f.peerDIDs() {
		out = append(out, exchange.ServerRoute{DID: did, StreamURL: f.peers[did].BaseURL + StreamPath, Client: f.cfg.Client})
	}
	return out
}

// DueMessage reports whether a message or edit of this node goes to server: in a channel linked
// with it or a DM with one of its users, not relayed from a peer (no origin tag), not older than
// the catch-up window, and not a TAGMSG (reactions travel in their own log; typing is ephemeral).
func (f *Federation) DueMessage(server string, m eventstore.Message) bool {
	return m.Command != "TAGMSG" && f.due(server, m.Venue, m.SenderDID, m.Tags, m.Time)
}

// DueDeletion reports whether a delete made on this node goes to server (as DueMessage).
func (f *Federation) DueDeletion(server string, d eventstore.Deletion) bool {
	return f.due(server, d.Venue, d.SenderDID, d.Tags, d.At)
}

// DueReaction reports whether a reaction made on this node goes to server: by an authenticated
// user, in a channel linked with it, not relayed from a peer, not older than the catch-up window.
func (f *Federation) DueReaction(server string, r eventstore.ReactionEvent) bool {
	return r.SenderDID != "" && r.Tags[TagOrigin] == "" && !r.At.Before(f.oldest()) && f.Linked(server, r.Venue)
}

// due is the rule DueMessage and DueDeletion share.
func (f *Federation) due(server, venue, senderDID string, tags map[string]string, at time.Time) bool {
	if tags[TagOrigin] != "" || at.Before(f.oldest()) {
		return false
	}
	return f.Linked(server, venue) || f.dmForPeer(server, venue, senderDID)
}

// oldest is the oldest event still sent: catch-up is bounded by CatchUpWindow.
func (f *Federation) oldest() time.Time { return f.cfg.Now().Add(-f.cfg.CatchUpWindow) }

// AuthenticateStream names the configured server whose node signed a stream request, with the
// key that signed it: a key of the server's did:web document, read through the peer key cache
// (only configured peers; a kid is filed under the key it hashes to). A signer that is not a
// configured peer, or is readonly (a readonly peer originates nothing), is refused 403; an
// unknown kid, a stale date or a bad signature 401. Nothing of the stream is read before.
func (f *Federation) AuthenticateStream(r *http.Request) (string, ed25519.PublicKey, int, error) {
	status, why, signer := http.StatusUnauthorized, error(nil), ""
	lookup := func(did, kid string) (ed25519.PublicKey, bool) {
		signer = did
		peer, ok := f.peers[did]
		switch {
		case !ok:
			status, why = http.StatusForbidden, fmt.Errorf("%s is not a configured peer of this server", truncate(did, 80))
			return nil, false
		case !peer.Trust.MayMessage():
			status, why = http.StatusForbidden, fmt.Errorf("%s is readonly: a readonly peer originates nothing", did)
			return nil, false
		}
		pub, err := f.keys.lookup(r.Context(), peer, kid)
		if err != nil {
			f.metrics.keyRead.WithLabelValues(peer.DID, "miss").Inc()
			why = err
			return nil, false
		}
		f.metrics.keyRead.WithLabelValues(peer.DID, "hit").Inc()
		return pub, true
	}
	server, pub, err := exchange.VerifyRequest(r.Header, lookup, http.MethodGet, StreamPath, nil, f.cfg.Now())
	if err != nil {
		if why != nil {
			err = why
		}
		if _, ok := f.peers[signer]; ok {
			f.metrics.count(signer, "in", "refused", 1)
		}
		return "", nil, status, fmt.Errorf("stream request: %w", err)
	}
	if err := f.keys.fileOnce(r.Context(), server, signing.KID(pub), pub); err != nil {
		f.log.Warn("registering a peer server key", "peer", server, "err", err)
		return "", nil, http.StatusServiceUnavailable, fmt.Errorf("stream request: the peer's key could not be registered yet: %w", err)
	}
	return server, pub, http.StatusOK, nil
}

// errReadonly ends the stream of a readonly peer that sent something.
var errReadonly = errors.New("a readonly peer may originate nothing")

// ReceiveFrame applies one frame of server's stream: the items go through applyItems, peering's
// checks and then the inbound pipeline. It first waits for the peer's rate limit (100 items a
// second, shared with its envelopes): a flood slows that server's stream only, whose sender waits
// for the acknowledgement. It returns once what it took is stored, with how much of each list.
func (f *Federation) ReceiveFrame(ctx context.Context, server string, fr exchange.ServerFrame) (exchange.Taken, error) {
	peer, ok := f.peers[server]
	if !ok {
		return exchange.Taken{}, fmt.Errorf("frame from %s, which is not a configured peer", truncate(server, 80))
	}
	n := len(fr.Events) + len(fr.Deletions) + len(fr.Reactions)
	if n == 0 {
		return exchange.Taken{}, nil
	}
	if !peer.Trust.MayMessage() {
		f.metrics.count(peer.DID, "in", "refused", n)
		return exchange.Taken{}, fmt.Errorf("frame from %s: %w", peer.DID, errReadonly)
	}
	lock := f.inbound[peer.DID]
	lock.Lock()
	defer lock.Unlock()
	if err := f.pace(ctx, peer.DID, n); err != nil {
		return exchange.Taken{}, err
	}
	taken, err := f.applyItems(ctx, peer, fr)
	if err != nil {
		return taken, fmt.Errorf("frame from %s: %w", peer.DID, err)
	}
	return taken, nil
}

// pace waits until the peer's rate limit lets n more items in. A frame larger than the limit's
// burst can never be let in: it ends the stream.
func (f *Federation) pace(ctx context.Context, peer string, n int) error {
	now := f.cfg.Now()
	res := f.limiters[peer].ReserveN(now, n)
	if !res.OK() {
		f.metrics.count(peer, "in", "refused", n)
		return fmt.Errorf("a frame of %d items from %s: at most %d a second", n, peer, MaxBatchItems)
	}
	d := res.DelayFrom(now)
	if d <= 0 {
		return nil
	}
	f.metrics.count(peer, "in", "paced", n)
	if err := f.sleep(ctx, d); err != nil {
		res.CancelAt(f.cfg.Now())
		return fmt.Errorf("pacing %s: %w", peer, err)
	}
	return nil
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// StreamUp: this node's stream to server is open, so the link is up. The outbox sends the
// snapshots a link coming up calls for (the home's topics and modes, this cluster's members).
func (f *Federation) StreamUp(server string) {
	o := f.outboxes[server]
	if o == nil {
		return
	}
	f.metrics.linkUp.WithLabelValues(server).Set(1)
	o.mu.Lock()
	o.link, o.forgot, o.synced = linkUp, false, false
	o.epoch++
	o.mu.Unlock()
	o.kick()
}

// StreamDown: this node's stream to server failed, or could not be opened: the link is down.
// Requests waiting for the home fail (they are never applied late), the peer's members are
// forgotten cluster-wide (once per outage), and the next envelope asks for them again.
func (f *Federation) StreamDown(server string, err error) {
	o := f.outboxes[server]
	if o == nil {
		return
	}
	f.metrics.linkUp.WithLabelValues(server).Set(0)
	o.mu.Lock()
	o.synced, o.link = false, linkDown
	o.epoch++
	forget := !o.forgot
	o.forgot, o.askPresence = true, true
	o.mu.Unlock()
	if err == nil {
		err = errors.New("stream closed")
	}
	o.failRequests(err)
	if forget {
		f.linkLost(f.ctx, server)
	}
	f.log.Debug("federation stream down", "peer", server, "err", err)
}
