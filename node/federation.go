package node

import (
	"fmt"

	"github.com/palaver-chat/palaver/federation/eventstore"
	"github.com/palaver-chat/palaver/federation/peering"
	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// startFederation builds this node's side of the configured peerings (none: nothing to do).
// Peers are reached, and their did:web documents read, through an SSRF-guarded client: the
// resolver's (which only AllowPrivateDID lets reach loopback addresses), or with PeerAllowPrivate
// one that may reach private addresses (it is only ever pointed at configured peers).
func (n *Node) startFederation(prop *proposer, resolver *keyresolver.Resolver) error {
	if len(n.cfg.Peers) == 0 {
		if len(n.cfg.Links) > 0 {
			return fmt.Errorf("federation: --link-channel needs a --peer")
		}
		return nil
	}
	client := resolver.HTTPClient()
	if n.cfg.PeerAllowPrivate {
		client = keyresolver.NewPeerClient(keyresolver.PeerClientOptions{AllowPrivateAddresses: true})
	}
	fed, err := peering.New(peering.Config{
		ServerDID: "did:web:" + n.cfg.ServerName, NodeName: n.cfg.NodeName, Key: n.serverKey,
		Peers: n.cfg.Peers, Links: n.cfg.Links, Store: n.events, State: n.machine, Proposer: prop,
		Client: n.cfg.Faults.client(client, federationPoint), PeerKeyRetry: n.cfg.PeerKeyRetry,
		Deliver: n.cfg.Faults.deliver(PanicFederationApply, n.irc.DeliverRemote), DeliverDeletion: n.irc.DeliverDeletion, Publish: n.publish,
		Registerer: n.metrics.Registry, SendEvery: n.cfg.FederationSendEvery,
		Logger: n.log.With("component", "federation"),
	})
	if err != nil {
		return fmt.Errorf("federation: %w", err)
	}
	n.federation = fed
	n.irc.SetFederation(fed)
	return nil
}

// publishStored hands a message stored here to the other nodes and to the federation outboxes.
func (n *Node) publishStored(m eventstore.Message) {
	n.publish(m)
	if n.federation != nil {
		n.federation.Kick()
	}
}

// observe hands the replicated state's events to the IRC edge and to federation. The render
// queue calls it, in log order, on its own goroutine.
func (n *Node) observe(_ uint64, events []fsm.Event) {
	n.irc.Observe(events)
	n.observeAV(events)
	if n.federation != nil {
		n.federation.Observe(events)
	}
}

// resync has the IRC edge rebuild its view of local channel members after a snapshot restore,
// whose entries' events were never rendered.
func (n *Node) resync(uint64) { n.irc.Resync() }
