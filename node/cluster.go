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
	"github.com/palaver-chat/palaver/raft"
	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/trust"
)

// Gossiped node metadata: the node's DID and its public HTTP server's URL. The other nodes reach
// its event exchange at its cluster address (raft.Member.ClusterAddr), never at the public one.
const (
	metaDID  = "did"
	metaHTTP = "http"
)

// clusterSecretFile is where the first node of a cluster writes the cluster secret, under its
// data directory.
var clusterSecretFile = filepath.Join("cluster", "secret")

// credentialsFile is where a node keeps its enrolment in the cluster (raft/trust.Credentials):
// its own key, the certificate the cluster's CA issued for it, and the secret without its CA
// keys.
var credentialsFile = filepath.Join("cluster", "node")

// clustered reports whether the node gossips and serves the cluster planes.
func (c Config) clustered() bool { return c.GossipAddr != "" || c.Faults.network() != nil }

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
	prop    atomic.Pointer[proposer] // set once Raft is open
}

func (k *nodeKeys) NodeKey(node string) (sum []byte, ok bool) {
	k.machine.Read(func(st *fsm.State) { sum, ok = st.NodeKey(node) })
	return sum, ok
}

func (k *nodeKeys) PinnedNodes() (nodes []string) {
	k.machine.Read(func(st *fsm.State) { nodes = st.PinnedNodes() })
	return nodes
}

func (k *nodeKeys) PinNodeKey(ctx context.Context, node string, sum []byte) error {
	prop := k.prop.Load()
	if prop == nil {
		return errors.New("raft is not open yet")
	}
	res, err := prop.Propose(ctx, fsm.SetNodeKey{Node: node, Key: sum})
	if err != nil {
		return err
	}
	if res.Code != fsm.OK && res.Code != fsm.NoChange {
		return fmt.Errorf("set node key: %s", res.Code)
	}
	return nil
}

// startExchange builds the event exchange between the cluster's nodes and with the configured
// servers (federation plugs them in when it implements exchange.Servers); it subscribes to the
// Stored stream in its constructor, and is told of every membership change.
func (n *Node) startExchange(context.Context) error {
	var servers exchange.Servers // nil, not a typed nil, without federation
	if s, ok := any(n.federation).(exchange.Servers); ok && n.federation != nil {
		servers = s
	}
	n.exchange = exchange.New(exchange.Config{
		ServerDID: "did:web:" + n.cfg.ServerName, Servers: servers,
		Self: n.ServerDID(), Key: n.serverKey, Store: n.events, Accept: n.chat, Keys: n.serverKeyOf, Peers: n.peers,
		Events: n.playbackEvents(), EventsGap: n.playbackGap(),
		Stored: n.streams.Stored, Logger: n.log.With("component", "exchange"),
		Client: n.cfg.Faults.client(n.raft.ClusterHTTPClient(), exchangePoint), Authenticate: n.clusterPeer,
		BeforeFrame: n.cfg.Faults.beforeFrame(),
		PullEvery:   n.cfg.ExchangePullEvery, PageSize: n.cfg.ExchangePageSize, QueueSize: n.cfg.ExchangeQueueSize,
	})
	if err := n.metrics.Registry.Register(n.exchange.Metrics()); err != nil {
		return fmt.Errorf("exchange metrics: %w", err)
	}
	n.raft.OnMembership(n.membershipChanged)
	return nil
}

// membershipChanged keeps the exchange's peer list current and has it pull at once.
func (n *Node) membershipChanged(members []raft.Member) {
	n.refreshMembers(members)
	n.exchange.Kick()
}

// serveClusterPlane serves the event exchange on the cluster listener's HTTP plane (mutual TLS,
// peers of the cluster only); an unclustered node has no such plane and no peers.
func (n *Node) serveClusterPlane(context.Context) error {
	ln := n.raft.ClusterHTTPListener()
	if ln == nil {
		return nil
	}
	e := gin.New()
	e.Use(gin.Recovery())
	n.exchange.Mount(e)
	n.mountMediaInternal(e)
	n.clusterSrv = &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 16 << 10,
		ErrorLog: slog.NewLogLogger(n.log.With("component", "cluster-http").Handler(), slog.LevelDebug)}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.clusterSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			n.log.Error("cluster http server", "err", err)
		}
	}()
	return nil
}

// clusterPeer names the node DID at the other end of a cluster-plane request: the node its TLS
// certificate names, which must be a server of the Raft configuration.
func (n *Node) clusterPeer(r *http.Request) (string, error) {
	node, err := n.raft.ClusterPeer(r.TLS)
	if err != nil {
		return "", err
	}
	return "did:web:" + node, nil
}

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
		if m.Self || m.State != raft.MemberAlive || m.Meta[metaDID] == "" || m.ClusterAddr == "" {
			continue
		}
		out = append(out, exchange.Peer{DID: m.Meta[metaDID], BaseURL: "https://" + m.ClusterAddr})
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

// purgeRemovedNode runs on the leader after a dead node left the Raft configuration: its sessions,
// their nicks and memberships are ended through Raft.
func (n *Node) purgeRemovedNode(nodeID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prop := n.prop
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
		for se := range st.Sessions() {
			if !known[se.Node] && !seen[se.Node] {
				seen[se.Node] = true
				departed = append(departed, se.Node)
			}
		}
	})
	prop := n.prop
	for _, node := range departed {
		if _, err := prop.Propose(ctx, fsm.PurgeNode{Node: node, Reason: "Node left the cluster"}); err != nil {
			n.log.Warn("purging a departed node's sessions", "departed", node, "err", err)
		}
	}
}
