package node

import (
	"context"
	"fmt"

	"github.com/palaver-chat/palaver/federation/exchange"
	"github.com/palaver-chat/palaver/federation/peering"
	"github.com/palaver-chat/palaver/keyresolver"
)

// startFederation builds the exchange's allow-list (the live nodes of the cluster and the
// configured servers, exported as palaver_exchange_peer) and this node's side of the configured
// peerings (none: nothing more to do), whose inbound pipeline hands what peers send to the chat
// service as the exchange's does.
// Peers are reached, and their did:web documents read, through an SSRF-guarded client: the
// resolver's (which only AllowPrivateDID lets reach loopback addresses), or with PeerAllowPrivate
// one that may reach private addresses (it is only ever pointed at configured peers).
func (n *Node) startFederation(context.Context) error {
	servers := make([]exchange.Member, 0, len(n.cfg.Peers))
	for _, p := range n.cfg.Peers {
		if p.Trust == "" {
			p.Trust = peering.TrustRelay
		}
		servers = append(servers, p.Member())
	}
	allow, err := exchange.NewAllowList(n.peers, servers)
	if err != nil {
		return err
	}
	n.allow = allow
	if err := n.metrics.Registry.Register(allow); err != nil {
		return fmt.Errorf("peer metrics: %w", err)
	}
	if len(n.cfg.Peers) == 0 {
		if len(n.cfg.Links) > 0 {
			return fmt.Errorf("--link-channel needs a --peer")
		}
		return nil
	}
	client := n.resolver.HTTPClient()
	if n.cfg.PeerAllowPrivate {
		client = keyresolver.NewPeerClient(keyresolver.PeerClientOptions{AllowPrivateAddresses: true})
	}
	fed, err := peering.New(peering.Config{
		ServerDID: "did:web:" + n.cfg.ServerName, NodeName: n.cfg.NodeName, Key: n.serverKey,
		Allow: n.allow, Accept: n.chat, Links: n.cfg.Links, Store: n.events, State: n.machine, Proposer: n.prop,
		Client: n.cfg.Faults.client(client, federationPoint), PeerKeyRetry: n.cfg.PeerKeyRetry,
		Streams:    n.streams,
		Registerer: n.metrics.Registry, SendEvery: n.cfg.FederationSendEvery, CatchUpWindow: n.cfg.FederationCatchUpWindow,
		Logger: n.log.With("component", "federation"),
	})
	if err != nil {
		return err
	}
	n.federation = fed
	return nil
}
