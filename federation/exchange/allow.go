package exchange

import (
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// The allow-list: every peer chat events are exchanged with, and what each may do here. A peer is
// either a node of this cluster (trust "cluster", found through membership: the list follows
// gossip and the Raft configuration) or a federated server the operator configured (trust
// "full", "relay" or "readonly"). A peer that is on neither list is refused before anything it
// sent is read.

// Trust is what a peer may originate here.
type Trust string

// Trust levels.
const (
	// TrustCluster is a node of this cluster: it checked what it sends against the same
	// replicated state, so its messages, edits, deletes and reactions are stored as they come
	// (deduplicated by msgid); its state changes go through Raft, never through the exchange.
	TrustCluster Trust = "cluster"
	// TrustFull is a server whose users' messages, edits, deletes and reactions are accepted
	// (each checked against local state and its author's signature), and which holds the
	// authority of the channels it is home of (topics, flags, bans, pins).
	TrustFull Trust = "full"
	// TrustRelay is a server whose users' messages, edits, deletes, reactions and presence are
	// accepted, never anyone else's (impostor checks), and whose channel state changes are
	// dropped: it holds no authority here.
	TrustRelay Trust = "relay"
	// TrustReadonly is a server this node sends to and never accepts anything from.
	TrustReadonly Trust = "readonly"
)

// ParseServerTrust reads the trust level of a configured server: full, relay or readonly
// ("cluster" is given by membership only).
func ParseServerTrust(s string) (Trust, error) {
	switch t := Trust(strings.ToLower(strings.TrimSpace(s))); t {
	case TrustFull, TrustRelay, TrustReadonly:
		return t, nil
	}
	return "", fmt.Errorf("trust %q: want full, relay or readonly", s)
}

// MayMessage reports whether the peer's messages, edits, deletes, reactions and presence are
// accepted.
func (t Trust) MayMessage() bool { return t == TrustCluster || t == TrustFull || t == TrustRelay }

// MayChangeState reports whether the peer may change a linked channel's state here (it is the
// home's authority, or answers this server's requests).
func (t Trust) MayChangeState() bool { return t == TrustFull }

// Checked reports whether the peer's events are checked against local state and signatures
// before they are stored (every server; not a node of this cluster).
func (t Trust) Checked() bool { return t != TrustCluster }

// Member is one peer of the allow-list.
type Member struct {
	DID     string // did:web:<node name> for a node, did:web:<server name> for a server
	BaseURL string // a node's cluster plane, a server's public HTTP base URL
	Trust   Trust
}

// AllowList is the one list of peers: the live nodes of this cluster and the configured servers.
type AllowList struct {
	nodes   func() []Peer
	servers map[string]Member
	order   []string // server DIDs, sorted
}

// NewAllowList builds the allow-list. nodes lists the other live nodes of the cluster (nil: none);
// servers are the configured federated servers, each with a server trust level.
func NewAllowList(nodes func() []Peer, servers []Member) (*AllowList, error) {
	a := &AllowList{nodes: nodes, servers: map[string]Member{}}
	for _, s := range servers {
		if s.DID == "" || s.BaseURL == "" {
			return nil, fmt.Errorf("allow-list: a server needs a DID and a base URL (%q)", s.DID)
		}
		if _, err := ParseServerTrust(string(s.Trust)); err != nil {
			return nil, fmt.Errorf("allow-list: server %s: %w", s.DID, err)
		}
		if _, dup := a.servers[s.DID]; dup {
			return nil, fmt.Errorf("allow-list: server %s listed twice", s.DID)
		}
		a.servers[s.DID] = s
		a.order = append(a.order, s.DID)
	}
	slices.Sort(a.order)
	return a, nil
}

// Nodes lists the other live nodes of the cluster.
func (a *AllowList) Nodes() []Peer {
	if a == nil || a.nodes == nil {
		return nil
	}
	return a.nodes()
}

// Node finds a live node of the cluster by DID.
func (a *AllowList) Node(did string) (Member, bool) {
	for _, p := range a.Nodes() {
		if p.DID == did {
			return Member{DID: p.DID, BaseURL: p.BaseURL, Trust: TrustCluster}, true
		}
	}
	return Member{}, false
}

// Server finds a configured server by DID.
func (a *AllowList) Server(did string) (Member, bool) {
	if a == nil {
		return Member{}, false
	}
	m, ok := a.servers[did]
	return m, ok
}

// Servers lists the configured servers, by DID.
func (a *AllowList) Servers() []Member {
	if a == nil {
		return nil
	}
	out := make([]Member, 0, len(a.order))
	for _, did := range a.order {
		out = append(out, a.servers[did])
	}
	return out
}

// Members lists every peer: the live nodes (trust cluster), then the servers, each group by DID.
func (a *AllowList) Members() []Member {
	nodes := a.Nodes()
	out := make([]Member, 0, len(nodes)+len(a.Servers()))
	for _, p := range nodes {
		out = append(out, Member{DID: p.DID, BaseURL: p.BaseURL, Trust: TrustCluster})
	}
	slices.SortFunc(out, func(x, y Member) int { return strings.Compare(x.DID, y.DID) })
	return append(out, a.Servers()...)
}

var peerDesc = prometheus.NewDesc("palaver_exchange_peer",
	"Peers of the event exchange: 1 for each live node of the cluster and each configured server, by trust level.",
	[]string{"peer", "trust"}, nil)

// Describe implements prometheus.Collector.
func (a *AllowList) Describe(ch chan<- *prometheus.Desc) { ch <- peerDesc }

// Collect implements prometheus.Collector: one series per peer, read at scrape time.
func (a *AllowList) Collect(ch chan<- prometheus.Metric) {
	for _, m := range a.Members() {
		ch <- prometheus.MustNewConstMetric(peerDesc, prometheus.GaugeValue, 1, m.DID, string(m.Trust))
	}
}
