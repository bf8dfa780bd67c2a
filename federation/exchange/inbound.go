package exchange

import (
	"context"

	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/stream"
)

// The inbound pipeline: one path for what every peer sends, a node of this cluster or a federated
// server. Each plane authenticates its peer first (a cluster node by its TLS certificate and
// signed request or frame; a server by its signed envelope, peering) and decodes its wire; then
//
//	trust gate (the allow-list's level) → acceptance rules → dedupe by msgid → store → Stored
//
// in Pipeline.Receive. The last four are one step, the message service's AcceptRemote
// (Acceptor, node/chat.Service): a message already stored is not stored again and not published
// again, so nothing reaches local members twice whichever path brought it. Linked-channel
// authority (the home rule, requests and answers, presence) stays with peering, which plugs its
// checks in as the source's Authority.

// Acceptor is the node's chat service (node/chat.Service) as the inbound pipeline hands it the
// events peers made: it deduplicates, applies the acceptance rules, stores and publishes on Stored.
type Acceptor interface {
	AcceptRemote(ctx context.Context, src chat.Source, b chat.Batch) (chat.Result, error)
}

// Source is an authenticated peer as the pipeline sees it: who it is, with its trust level, and
// the rules its events meet (chat.Source: the Stored source, the Authority of a federated server,
// whether its lists are logs read after a cursor).
type Source struct {
	Peer Member
	chat.Source
}

// NotAllowed is the outcome of an item beyond its peer's trust level.
const NotAllowed chat.Outcome = "not-allowed"

// Pipeline is the inbound pipeline; the exchange and peering each hold one over the node's one
// chat service.
type Pipeline struct {
	accept Acceptor
}

// NewPipeline builds the pipeline around the acceptance step.
func NewPipeline(a Acceptor) *Pipeline { return &Pipeline{accept: a} }

// Receive runs a batch from an authenticated peer through the trust gate and the acceptance
// step. A peer whose trust level does not let it originate events here (readonly) has every item
// refused with NotAllowed, and nothing changes.
func (p *Pipeline) Receive(ctx context.Context, src Source, b chat.Batch) (chat.Result, error) {
	if !src.Peer.Trust.MayMessage() {
		return chat.Result{Messages: refuseAll(len(b.Messages)), Deletions: refuseAll(len(b.Deletions)),
			Reactions: refuseAll(len(b.Reactions))}, nil
	}
	return p.accept.AcceptRemote(ctx, src.Source, b)
}

func refuseAll(n int) []chat.Outcome {
	out := make([]chat.Outcome, n)
	for i := range out {
		out[i] = NotAllowed
	}
	return out
}

// clusterSource is a node of this cluster: it checked its events against the same replicated
// state, so they meet no Authority.
func clusterSource(originName string, ordered bool) Source {
	return Source{Peer: Member{DID: "did:web:" + originName, Trust: TrustCluster},
		Source: chat.Source{Kind: stream.Cluster, Ordered: ordered}}
}
