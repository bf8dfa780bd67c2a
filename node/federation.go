package node

import (
	"context"
	"fmt"

	"github.com/palaver-chat/palaver/federation/peering"
	"github.com/palaver-chat/palaver/keyresolver"
)

// startFederation builds this node's side of the configured peerings (none: nothing to do).
// Peers are reached, and their did:web documents read, through an SSRF-guarded client: the
// resolver's (which only AllowPrivateDID lets reach loopback addresses), or with PeerAllowPrivate
// one that may reach private addresses (it is only ever pointed at configured peers).
func (n *Node) startFederation(context.Context) error {
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
		Peers: n.cfg.Peers, Links: n.cfg.Links, Store: n.events, State: n.machine, Proposer: n.prop,
		Client: n.cfg.Faults.client(client, federationPoint), PeerKeyRetry: n.cfg.PeerKeyRetry,
		Streams:    n.streams,
		Registerer: n.metrics.Registry, SendEvery: n.cfg.FederationSendEvery,
		Logger: n.log.With("component", "federation"),
	})
	if err != nil {
		return err
	}
	n.federation = fed
	return nil
}
