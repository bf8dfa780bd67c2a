package peering

import (
	"context"
	"crypto/ed25519"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/raft/fsm"
)

type verdict int

const (
	verdictUnverifiable verdict = iota // unsigned, unknown key, no document: relayed intact
	verdictValid
	verdictInvalid
)

// sigResult is what a relayed event's own signature proves.
type sigResult struct {
	verdict  verdict
	byAuthor bool // checked with a key filed here under the sender's DID
	byPeer   bool // checked with one of the peer's server keys
	// knownElsewhere: this server holds keys of the sender's DID from a source other than a peer,
	// so the DID is not the peer's to vouch for.
	knownElsewhere bool
}

// authorizes reports whether the signature lets the sender change root: the author's own key,
// or the peer's server key when root itself came from that peer (the peer vouches for its users).
func (r sigResult) authorizes(root eventstore.Message, peer Peer) bool {
	if r.verdict != verdictValid {
		return false
	}
	return r.byAuthor || (r.byPeer && root.Tags[TagOrigin] == originName(peer.DID))
}

// speaksFor reports whether the signature lets the event act as its sender: the sender's own key,
// or a key the peer vouches for when the sender is not known here from anywhere else.
func (r sigResult) speaksFor() bool {
	return r.verdict == verdictValid && (r.byAuthor || !r.knownElsewhere)
}

// checkSignature rebuilds the document an event's +freeq.at/sig covers and checks it against the
// key its kid names: one filed here under the sender's DID (not retired), else a server key of
// the peer (read from its did:web document). The peer's own verdict is never trusted.
func checkSignature(ctx context.Context, f *Federation, peer Peer, command, senderDID, msgid, venue, text string, tags map[string]string) sigResult {
	sig := signing.SigFromTags(tags)
	if sig == "" || senderDID == "" {
		return sigResult{}
	}
	v, err := signing.ParseVenue(venue)
	if err != nil {
		return sigResult{}
	}
	doc, err := signing.DocumentFromTags(command, signing.Envelope{From: senderDID, MsgID: msgid, Venue: v}, text, tags)
	if err != nil {
		return sigResult{}
	}
	canonical, err := doc.Canonical()
	if err != nil {
		return sigResult{}
	}
	var res sigResult
	lookup := func(kid string) (ed25519.PublicKey, bool) {
		var pub ed25519.PublicKey
		vouched, known := false, false
		f.cfg.State.Read(func(st *fsm.State) {
			if k, ok := st.Key(senderDID, kid); ok && k.RemovedAt() == 0 {
				pub, vouched = k.PublicKey(), k.Source() == "origin-server"
			}
			for _, k := range st.KeysOf(senderDID) {
				known = known || k.Source() != "origin-server"
			}
		})
		res.knownElsewhere = known
		if pub != nil {
			// A key a peer vouched for proves no more than that peer's own server key.
			res.byAuthor, res.byPeer = !vouched, vouched
			return pub, true
		}
		if p, err := f.keys.lookup(ctx, peer, kid); err == nil {
			res.byPeer = true
			if err := f.keys.fileOnce(ctx, peer.DID, kid, p); err != nil {
				f.log.Warn("registering a peer server key", "peer", peer.DID, "kid", kid, "err", err)
			}
			return p, true
		}
		// A user of the peer signed with a session key: ask the peer for it, but never for a DID
		// whose keys this server holds from elsewhere (a peer does not get to vouch for them).
		if known {
			return nil, false
		}
		p, err := f.keys.authorKey(ctx, peer, senderDID, kid)
		if err != nil {
			return nil, false
		}
		if err := f.keys.fileOnce(ctx, senderDID, kid, p); err != nil {
			f.log.Warn("registering a peer user's key", "peer", peer.DID, "did", senderDID, "err", err)
			return nil, false
		}
		res.byPeer = true
		return p, true
	}
	switch got, _ := signing.Verify(canonical, sig, lookup); got {
	case signing.Valid:
		res.verdict = verdictValid
	case signing.Invalid:
		res.verdict = verdictInvalid
	default:
		res = sigResult{knownElsewhere: res.knownElsewhere}
	}
	return res
}

func validMsgID(id string) bool {
	if len(id) != ulid.EncodedSize {
		return false
	}
	_, err := ulid.ParseStrict(id)
	return err == nil && id == ulidUpper(id)
}

func ulidUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func validDID(did string) bool {
	_, err := keyresolver.ValidateDID(did)
	return err == nil && len(did) <= maxNameBytes
}
