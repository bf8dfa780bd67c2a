package node

import (
	"context"
	"crypto/ed25519"
	"time"

	"github.com/palaver-chat/palaver/federation/eventstore"
	"github.com/palaver-chat/palaver/federation/exchange"
	"github.com/palaver-chat/palaver/raft"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// Gossiped node metadata: where the other nodes find this node's event exchange, and its DID.
const (
	metaDID  = "did"
	metaHTTP = "http"
)

// peers lists the other live nodes for the event exchange: the list the last membership change
// left (refreshMembers), read for every message sent, so it must not ask Raft each time.
func (n *Node) peers() []exchange.Peer {
	if p := n.peerList.Load(); p != nil {
		return *p
	}
	return peersOf(n.raft.Members())
}

// refreshMembers keeps the peer list current; OnMembership calls it after every gossip or
// configuration change, and once when it is registered.
func (n *Node) refreshMembers(members []raft.Member) {
	p := peersOf(members)
	n.peerList.Store(&p)
}

func peersOf(members []raft.Member) []exchange.Peer {
	var out []exchange.Peer
	for _, m := range members {
		if m.Self || m.State != raft.MemberAlive || m.Meta[metaDID] == "" || m.Meta[metaHTTP] == "" {
			continue
		}
		out = append(out, exchange.Peer{DID: m.Meta[metaDID], BaseURL: m.Meta[metaHTTP]})
	}
	return out
}

// serverKeyOf finds a cluster node's server key in the replicated key registry.
func (n *Node) serverKeyOf(did, kid string) (ed25519.PublicKey, bool) {
	var pub ed25519.PublicKey
	n.machine.Read(func(st *fsm.State) {
		if k := st.Key(did, kid); k != nil && k.Source == "server-key" && k.RemovedAt == 0 {
			pub = append(ed25519.PublicKey(nil), k.PublicKey...)
		}
	})
	return pub, pub != nil
}

// publish hands a message stored here to the other nodes.
func (n *Node) publish(m eventstore.Message) {
	if n.exchange != nil {
		n.exchange.Publish(m)
	}
}

// purgeRemovedNode runs on the leader after a dead node left the Raft configuration: its sessions,
// their nicks and memberships are ended through Raft.
func (n *Node) purgeRemovedNode(nodeID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prop := &proposer{store: n.raft, node: n.cfg.NodeName}
	if _, err := prop.Propose(ctx, fsm.PurgeNode{Node: nodeID, Reason: "Node left the cluster"}); err != nil {
		n.log.Warn("purging a removed node's sessions", "removed", nodeID, "err", err)
	}
}

// purgeDepartedNodes runs when this node becomes leader: sessions held by nodes that are no longer
// in the cluster (their removal committed, but a previous leader lost leadership before purging
// them) are ended through Raft, so their nicks and memberships do not linger.
func (n *Node) purgeDepartedNodes(ctx context.Context) {
	known := map[string]bool{}
	for _, m := range n.raft.Members() {
		if m.Suffrage != raft.NotInConfiguration || m.State == raft.MemberAlive {
			known[m.NodeID] = true
		}
	}
	var departed []string
	n.machine.Read(func(st *fsm.State) {
		seen := map[string]bool{}
		for _, se := range st.Sessions {
			if !known[se.Node] && !seen[se.Node] {
				seen[se.Node] = true
				departed = append(departed, se.Node)
			}
		}
	})
	prop := &proposer{store: n.raft, node: n.cfg.NodeName}
	for _, node := range departed {
		if _, err := prop.Propose(ctx, fsm.PurgeNode{Node: node, Reason: "Node left the cluster"}); err != nil {
			n.log.Warn("purging a departed node's sessions", "departed", node, "err", err)
		}
	}
}
