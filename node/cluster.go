package node

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/federation/exchange"
	"github.com/palaver-chat/palaver/federation/peering"
	"github.com/palaver-chat/palaver/gateway/irc"
	"github.com/palaver-chat/palaver/gateway/media"
	"github.com/palaver-chat/palaver/gateway/metrics"
	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/stream"
	"github.com/palaver-chat/palaver/raft"
	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/trust"
)

// Gossiped node metadata: the node's DID and its public HTTP server's URL. The other nodes reach
// its event exchange at its cluster address (raft.Member.ClusterAddr), never at the public one.
const (
	metaDID  = "did"
	metaHTTP = "http"
	metaInfo = "info" // Config.ServerInfo, for the other nodes' LINKS
)

// clusterSecretFile is where the first node of a cluster writes the cluster secret, under its
// data directory.
var clusterSecretFile = filepath.Join("cluster", "secret")

// credentialsFile is where a node keeps its enrolment in the cluster (raft/trust.Credentials):
// its own key, the certificate the cluster's CA issued for it, and the secret without its CA
// keys.
var credentialsFile = filepath.Join("cluster", "node")

// clustered reports whether the node gossips and serves the cluster planes.
func (c Config) clustered() bool {
	network, _ := c.Faults.inject().raft()
	return c.GossipAddr != "" || network != nil
}

// enrolled reports whether the data directory holds the node's credentials.
func (c Config) enrolled() bool {
	_, err := os.Stat(filepath.Join(c.DataDir, credentialsFile))
	return err == nil
}

// clusterIdentity is this node's cluster identity, from its credentials (<data>/cluster/node): nil
// for an unclustered node, which opens no cluster port. With a secret file (--cluster-secret, or
// <data>/cluster/secret when present) the node enrols first: it makes its key the first time, and
// has the secret's primary CA issue its certificate when it has none from that CA; the CA key is
// used in memory only and never written to the credentials. A clustered node with neither
// credentials nor a secret, and no --join, is the first node: it creates the secret in
// <data>/cluster/secret.
func clusterIdentity(cfg Config, log *slog.Logger) (*trust.Identity, error) {
	if !cfg.clustered() {
		return nil, nil
	}
	credPath := filepath.Join(cfg.DataDir, credentialsFile)
	creds, err := trust.LoadCredentials(credPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("node credentials: %w", err)
	}
	path := cfg.ClusterSecret
	if path == "" {
		own := filepath.Join(cfg.DataDir, clusterSecretFile)
		switch _, err := os.Stat(own); {
		case err == nil:
			path = own
			if creds != nil {
				log.Warn("the cluster secret is in the data directory, where a stolen disk would give its CA key away; the node runs without it: keep it on the operator's machine only", "path", own)
			}
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("cluster secret: %w", err)
		case creds != nil:
		case len(cfg.Join) > 0:
			return nil, errors.New("cluster secret: --join needs --cluster-secret FILE to enrol this node")
		default:
			secret, err := trust.Generate()
			if err != nil {
				return nil, fmt.Errorf("cluster secret: %w", err)
			}
			if err := secret.Save(own); err != nil {
				return nil, fmt.Errorf("cluster secret: %w", err)
			}
			log.Info("created the cluster secret; give it to every node that joins (--cluster-secret), then keep it off the nodes: they run on their own credentials", "path", own)
			path = own
		}
	}
	if path != "" {
		secret, err := trust.Load(path)
		if err != nil {
			return nil, fmt.Errorf("cluster secret: %w", err)
		}
		next, changed, err := trust.Enrol(secret, cfg.NodeName, creds)
		if err != nil {
			return nil, fmt.Errorf("cluster enrolment: %w", err)
		}
		if changed {
			if err := next.Save(credPath); err != nil {
				return nil, fmt.Errorf("cluster enrolment: %w", err)
			}
			log.Info("enrolled in the cluster", "credentials", credPath, "certificate_until", next.Cert.NotAfter.UTC().Format(time.DateOnly))
		}
		creds = next
	}
	if creds.NodeID != cfg.NodeName {
		return nil, fmt.Errorf("node credentials: %s names node %q, not %q", credPath, creds.NodeID, cfg.NodeName)
	}
	identity, err := creds.Identity()
	if err != nil {
		return nil, fmt.Errorf("cluster identity: %w", err)
	}
	return identity, nil
}

// nodeKeys keeps the cluster's pins of node keys in the replicated state (raft.NodeKeys): the
// raft layer reads them on every handshake between nodes and the leader proposes them.
type nodeKeys struct {
	machine *fsm.Machine
	prop    *raftProposer
}

func (k nodeKeys) NodeKey(node string) (sum []byte, ok bool) {
	k.machine.Read(func(st *fsm.State) { sum, ok = st.NodeKey(node) })
	return sum, ok
}

func (k nodeKeys) PinnedNodes() (nodes []string) {
	k.machine.Read(func(st *fsm.State) { nodes = st.PinnedNodes() })
	return nodes
}

func (k nodeKeys) PinNodeKey(ctx context.Context, node string, sum []byte) error {
	res, err := k.prop.Propose(ctx, fsm.SetNodeKey{Node: node, Key: sum})
	if err != nil {
		return err
	}
	if res.Code != fsm.OK && res.Code != fsm.NoChange {
		return fmt.Errorf("set node key: %s", res.Code)
	}
	return nil
}

// newExchange builds the event exchange between the cluster's nodes and with the configured
// servers (federation plugs them in when it implements exchange.Servers); it subscribes to the
// Stored stream in its constructor, serves the channel events the IRC edge files (and fills in
// those it did not), and is told of every membership change.
func newExchange(cfg Config, log *slog.Logger, fl faults, rf *raft.Store, members *members, keys serverKeys,
	serverKey ed25519.PrivateKey, events *eventstore.Store, msgs *chat.Service, ircSrv *irc.Server,
	streams *stream.Streams, fed *peering.Federation, mset *metrics.Set) (*exchange.Exchange, error) {
	var servers exchange.Servers // nil, not a typed nil, without federation
	if fed != nil {
		servers = fed
	}
	client, beforeFrame := fl.exchange(rf.ClusterHTTPClient())
	ex := exchange.New(exchange.Config{
		ServerDID: "did:web:" + cfg.ServerName, Servers: servers,
		Self: serverDID(cfg), Key: serverKey, Store: events, Accept: msgs, Keys: keys.of, Peers: members.peers,
		Events: events, EventsGap: ircSrv.PlaybackGap,
		Stored: streams.Stored, Logger: log.With("component", "exchange"),
		Client: client, Authenticate: clusterAuth{rf}.peer,
		BeforeFrame: beforeFrame,
		PullEvery:   cfg.ExchangePullEvery, PageSize: cfg.ExchangePageSize, QueueSize: cfg.ExchangeQueueSize,
	})
	if err := mset.Registry.Register(ex.Metrics()); err != nil {
		ex.Close()
		return nil, fmt.Errorf("exchange metrics: %w", err)
	}
	rf.OnMembership(membershipWatch{members, ex}.changed)
	return ex, nil
}

// membershipWatch keeps the exchange's peer list current and has it pull at once.
type membershipWatch struct {
	members  *members
	exchange *exchange.Exchange
}

func (w membershipWatch) changed(ms []raft.Member) {
	w.members.refresh(ms)
	w.exchange.Kick()
}

// clusterPlane is the server of the cluster listener's HTTP plane (mutual TLS, peers of the
// cluster only): the event exchange and the media copies. An unclustered node has no such plane
// and no peers (nil).
func clusterPlane(log *slog.Logger, rf *raft.Store, ex *exchange.Exchange, med *media.Service, auth clusterAuth, keys serverKeys) (*http.Server, net.Listener) {
	ln := rf.ClusterHTTPListener()
	if ln == nil {
		return nil, nil
	}
	e := gin.New()
	e.Use(gin.Recovery())
	ex.Mount(e)
	mountMediaInternal(e, med, auth, keys)
	return &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 16 << 10,
		ErrorLog: slog.NewLogLogger(log.With("component", "cluster-http").Handler(), slog.LevelDebug)}, ln
}

// clusterAuth names the node DID at the other end of a cluster-plane request: the node its TLS
// certificate names, which must be a server of the Raft configuration.
type clusterAuth struct{ raft *raft.Store }

func (c clusterAuth) peer(r *http.Request) (string, error) {
	node, err := c.raft.ClusterPeer(r.TLS)
	if err != nil {
		return "", err
	}
	return "did:web:" + node, nil
}

// members lists the other live nodes for the event exchange: the list the last membership change
// left (refresh), read for every message sent, so it must not ask Raft each time.
type members struct {
	raft *raft.Store
	list atomic.Pointer[[]exchange.Peer]
}

func newMembers(rf *raft.Store) *members { return &members{raft: rf} }

func (m *members) peers() []exchange.Peer {
	if p := m.list.Load(); p != nil {
		return *p
	}
	return peersOf(m.raft.Members())
}

// refresh keeps the peer list current; OnMembership calls it after every gossip or
// configuration change, and once when it is registered.
func (m *members) refresh(ms []raft.Member) {
	p := peersOf(ms)
	m.list.Store(&p)
}

func peersOf(members []raft.Member) []exchange.Peer {
	var out []exchange.Peer
	for _, m := range members {
		if m.Self || m.State != raft.MemberAlive || m.Meta[metaDID] == "" || m.ClusterAddr == "" {
			continue
		}
		out = append(out, exchange.Peer{DID: m.Meta[metaDID], BaseURL: "https://" + m.ClusterAddr})
	}
	return out
}

// linkNodes lists the other live nodes of the cluster for IRC LINKS, each with the description
// it gossips; a node that gossips none (an earlier version) or one that is not printable is
// shown with this node's.
type linkNodes struct {
	raft *raft.Store
	info string // this node's Config.ServerInfo
}

func (l linkNodes) list() []irc.ClusterNode {
	var out []irc.ClusterNode
	for _, m := range l.raft.Members() {
		if m.Self || m.State != raft.MemberAlive {
			continue
		}
		info := m.Meta[metaInfo]
		if !validServerInfo(info) {
			info = l.info
		}
		out = append(out, irc.ClusterNode{Name: m.NodeID, Info: info})
	}
	return out
}

// serverKeys finds a cluster node's server key in the replicated key registry.
type serverKeys struct{ machine *fsm.Machine }

func (k serverKeys) of(did, kid string) (ed25519.PublicKey, bool) {
	var pub ed25519.PublicKey
	k.machine.Read(func(st *fsm.State) {
		if k, ok := st.Key(did, kid); ok && k.Source() == "server-key" && k.RemovedAt() == 0 {
			pub = k.PublicKey()
		}
	})
	return pub, pub != nil
}

// removedNodePurge runs on the leader after a dead node left the Raft configuration: its sessions,
// their nicks and memberships are ended through Raft.
type removedNodePurge struct {
	prop *raftProposer
	log  *slog.Logger
}

func (p removedNodePurge) run(nodeID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.prop.Propose(ctx, fsm.PurgeNode{Node: nodeID, Reason: "Node left the cluster"}); err != nil {
		p.log.Warn("purging a removed node's sessions", "removed", nodeID, "err", err)
	}
}

// purgeDeparted runs when this node becomes leader: sessions held by nodes that are no longer
// in the cluster (their removal committed, but a previous leader lost leadership before purging
// them) are ended through Raft, so their nicks and memberships do not linger.
type purgeDeparted struct {
	raft    *raft.Store
	machine *fsm.Machine
	prop    *proposer
	log     *slog.Logger
}

func (p purgeDeparted) run(ctx context.Context) {
	known := map[string]bool{}
	for _, m := range p.raft.Members() {
		if m.Suffrage != raft.NotInConfiguration || m.State == raft.MemberAlive {
			known[m.NodeID] = true
		}
	}
	var departed []string
	p.machine.Read(func(st *fsm.State) {
		seen := map[string]bool{}
		for se := range st.Sessions() {
			if !known[se.Node] && !seen[se.Node] {
				seen[se.Node] = true
				departed = append(departed, se.Node)
			}
		}
	})
	for _, node := range departed {
		if _, err := p.prop.Propose(ctx, fsm.PurgeNode{Node: node, Reason: "Node left the cluster"}); err != nil {
			p.log.Warn("purging a departed node's sessions", "departed", node, "err", err)
		}
	}
}
