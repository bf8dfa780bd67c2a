package node

import (
	"crypto/ed25519"
	"fmt"
	"log/slog"

	"github.com/palaver-chat/palaver/federation/exchange"
	"github.com/palaver-chat/palaver/federation/peering"
	"github.com/palaver-chat/palaver/gateway/metrics"
	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/stream"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// newFederation builds the exchange's allow-list (the live nodes of the cluster and the
// configured servers, exported as palaver_exchange_peer) and this node's side of the configured
// peerings (nil without any), whose inbound pipeline hands what peers send to the chat service as
// the exchange's does.
// Peers are reached, and their did:web documents read, through an SSRF-guarded client: the
// resolver's (which only AllowPrivateDID lets reach loopback addresses), or with PeerAllowPrivate
// one that may reach private addresses (it is only ever pointed at configured peers).
func newFederation(cfg Config, log *slog.Logger, fl faults, members *members, serverKey ed25519.PrivateKey, msgs *chat.Service,
	events *eventstore.Store, machine *fsm.Machine, prop *proposer, streams *stream.Streams, resolver *keyresolver.Resolver,
	mset *metrics.Set) (*peering.Federation, error) {
	servers := make([]exchange.Member, 0, len(cfg.Peers))
	for _, p := range cfg.Peers {
		if p.Trust == "" {
			p.Trust = peering.TrustRelay
		}
		servers = append(servers, p.Member())
	}
	allow, err := exchange.NewAllowList(members.peers, servers)
	if err != nil {
		return nil, err
	}
	if err := mset.Registry.Register(allow); err != nil {
		return nil, fmt.Errorf("peer metrics: %w", err)
	}
	if len(cfg.Peers) == 0 {
		if len(cfg.Links) > 0 {
			return nil, fmt.Errorf("--link-channel needs a --peer")
		}
		return nil, nil
	}
	client := resolver.HTTPClient()
	if cfg.PeerAllowPrivate {
		client = keyresolver.NewPeerClient(keyresolver.PeerClientOptions{AllowPrivateAddresses: true})
	}
	return peering.New(peering.Config{
		ServerDID: "did:web:" + cfg.ServerName, NodeName: cfg.NodeName, Key: serverKey,
		Allow: allow, Accept: msgs, Links: cfg.Links, Store: events, State: machine, Proposer: prop,
		Client: fl.federation(client), PeerKeyRetry: cfg.PeerKeyRetry,
		Streams:    streams,
		Registerer: mset.Registry, SendEvery: cfg.FederationSendEvery, CatchUpWindow: cfg.FederationCatchUpWindow,
		Logger: log.With("component", "federation"),
	})
}
