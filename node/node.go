package node

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/federation/eventstore"
	"github.com/palaver-chat/palaver/federation/exchange"
	"github.com/palaver-chat/palaver/federation/peering"
	"github.com/palaver-chat/palaver/federation/signing"
	"github.com/palaver-chat/palaver/gateway/irc"
	"github.com/palaver-chat/palaver/gateway/metrics"
	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/gateway/sasl"
	"github.com/palaver-chat/palaver/gateway/signingapi"
	"github.com/palaver-chat/palaver/gateway/transport"
	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/raft"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// Node is one running Palaver node.
type Node struct {
	cfg     Config
	log     *slog.Logger
	machine *fsm.Machine
	render  *renderQueue // applied events, rendered off Raft's apply path (render.go)
	raft    *raft.Store
	events  *eventstore.Store
	irc     *irc.Server
	rest    *rest.Server
	metrics *metrics.Set
	started time.Time

	serverKey ed25519.PrivateKey
	signing   *signingapi.API
	exchange  *exchange.Exchange

	federation *peering.Federation       // nil without peers
	av         atomic.Pointer[avSurface] // calls (av.go); nil until mounted

	peerList atomic.Pointer[[]exchange.Peer] // the other live nodes, as of the last membership change

	pprofSrv  *http.Server // runtime profiles on --pprof-addr (pprof.go); nil without it
	pprofAddr string

	ircLn, tlsLn, httpLn net.Listener
	httpSrv              *http.Server
	clusterSrv           *http.Server // the cluster's HTTP plane (the event exchange); nil unclustered

	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// Start opens the node's state and starts its listeners. The node runs until Close.
func Start(ctx context.Context, cfg Config, logger *slog.Logger) (n *Node, err error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if logger == nil {
		logger = slog.Default()
	}
	if err := secureDataDir(cfg.DataDir); err != nil {
		return nil, err
	}
	n = &Node{cfg: cfg, log: logger.With("node", cfg.NodeName), started: time.Now()}
	defer func() {
		if err != nil {
			n.Close()
			n = nil
		}
	}()
	n.metrics = metrics.New()
	n.machine = fsm.New(n.log)

	// The IRC edge observes the state machine from the first applied entry on.
	incarnation := ulid.Make().String()
	// The HTTP listener comes first: its address is gossiped to the other nodes.
	if n.httpLn, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
		return n, fmt.Errorf("http listener: %w", err)
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = "http://" + n.httpLn.Addr().String()
	}
	n.cfg = cfg
	identity, err := clusterIdentity(cfg, n.log)
	if err != nil {
		return n, err
	}
	n.raft, err = raft.Open(ctx, raft.Config{
		NodeID: cfg.NodeName, Dir: filepath.Join(cfg.DataDir, "raft"), BindAddr: cfg.RaftAddr,
		AdvertiseAddr: cfg.RaftAdvertise, Bootstrap: len(cfg.Join) == 0,
		GossipAddr: cfg.GossipAddr, GossipAdvertise: cfg.GossipAdvertise, ClusterAddr: cfg.ClusterAddr,
		ClusterAdvertise: cfg.ClusterAdvertise, Join: cfg.Join, MaxVoters: cfg.MaxVoters,
		DeadNodeGrace: cfg.DeadNodeGrace, Meta: map[string]string{metaDID: n.ServerDID(), metaHTTP: cfg.BaseURL},
		OnNodeRemoved: n.purgeRemovedNode,
		Logger:        n.log,
		OnApply:       func(d time.Duration) { n.metrics.RaftApplySeconds.Observe(d.Seconds()) },
		Network:       cfg.Faults.network(), LogWriteDelay: cfg.Faults.logWriteDelay(), Identity: identity,
		CommitTimeout:    cfg.RaftCommitTimeout,
		HeartbeatTimeout: cfg.RaftHeartbeatTimeout, ElectionTimeout: cfg.RaftElectionTimeout,
	}, n.machine)
	if err != nil {
		return n, fmt.Errorf("raft: %w", err)
	}
	waitCtx, cancelWait := context.WithTimeout(ctx, 30*time.Second)
	err = n.raft.WaitForLeader(waitCtx)
	if err == nil {
		// Apply every committed entry before serving reads from the replica.
		_, err = n.raft.ReadIndex(waitCtx)
	}
	cancelWait()
	if err != nil {
		return n, fmt.Errorf("raft: waiting for a leader: %w", err)
	}
	n.events, err = eventstore.Open(ctx, eventstore.Options{Path: filepath.Join(cfg.DataDir, "events.db"), Logger: n.log,
		Scope: n.channelScope})
	if err != nil {
		return n, fmt.Errorf("event store: %w", err)
	}
	resolver := keyresolver.New(keyresolver.Options{PLCDirectory: cfg.PLCDirectory, AllowPrivateAddresses: cfg.AllowPrivateDID, Logger: n.log.With("component", "keyresolver")})
	verifier := &sasl.Verifier{Resolver: resolver, ChallengeTTL: cfg.ChallengeTTL}
	motd, err := readMOTD(cfg.MOTDFile)
	if err != nil {
		return n, err
	}
	n.render = newRenderQueue(0, cfg.Faults.render(n.observe), n.resync)
	n.render.log = n.log.With("component", "render")
	n.render.start()
	prop := &proposer{store: n.raft, node: cfg.NodeName, rendered: n.render}
	n.serverKey, err = loadOrCreateServerKey(filepath.Join(cfg.DataDir, "keys"))
	if err != nil {
		return n, err
	}
	n.irc = irc.New(irc.Config{
		ServerName: cfg.ServerName, NodeName: cfg.NodeName, Incarnation: incarnation, Version: cfg.Version,
		MOTD: motd, Opers: cfg.Opers, OperDIDs: cfg.OperDIDs, NoGuests: cfg.NoGuests,
		FloodLimits: !cfg.NoFloodLimits, JoinHistory: cfg.JoinHistory,
		Logger: n.log.With("component", "irc"), Metrics: n.metrics, Now: cfg.Clock,
		ServerKey: n.serverKey, KeyLifetime: cfg.SigningKeyLifetime, Publish: n.publishStored,
		PingAfter: cfg.PingAfter, PingTimeout: cfg.PingTimeout, SendQBytes: cfg.SendQBytes,
		KeySweepEvery: cfg.KeySweepEvery,
		// Reactions and ephemeral TAGMSGs to the other nodes (n.exchange is set before serving).
		PublishReaction: func(r eventstore.ReactionEvent) { n.exchange.PublishReaction(r) },
		Relay:           func(m eventstore.Message) { n.exchange.Relay(m) },
	}, n.machine, prop, cfg.Faults.ircHistory(n.events), verifier)
	if err := n.startFederation(prop, resolver); err != nil {
		return n, err
	}
	n.machine.SetObserver(n.render.push)
	n.machine.SetRestoreObserver(n.render.pushResync)
	n.exchange = exchange.New(exchange.Config{
		Self: n.ServerDID(), Key: n.serverKey, Store: n.events, Keys: n.serverKeyOf, Peers: n.peers,
		Deliver:         cfg.Faults.deliver(PanicExchangeDeliver, n.irc.DeliverRemote),
		DeliverDeletion: n.irc.DeliverDeletion, Logger: n.log.With("component", "exchange"),
		DeliverReaction: n.irc.DeliverReaction, DeliverEphemeral: n.irc.DeliverRemote,
		Client: cfg.Faults.client(n.raft.ClusterHTTPClient(), exchangePoint), Authenticate: n.clusterPeer,
	})
	n.raft.OnMembership(func(members []raft.Member) {
		n.refreshMembers(members)
		n.exchange.Kick()
	})
	n.raft.OnLeadership(n.purgeDepartedNodes)
	n.raft.OnLeadership(n.sweepChannels)

	// Sessions held by an earlier process of this node died with it.
	purgeCtx, cancelPurge := context.WithTimeout(ctx, 30*time.Second)
	_, err = prop.Propose(purgeCtx, fsm.PurgeNode{Node: cfg.NodeName, Keep: incarnation, Reason: "Server restarted"})
	cancelPurge()
	if err != nil {
		return n, fmt.Errorf("purging old sessions: %w", err)
	}
	// Publish this node's public key to every replica (the private key stays in keys/).
	pub := n.serverKey.Public().(ed25519.PublicKey)
	keyCtx, cancelKey := context.WithTimeout(ctx, 30*time.Second)
	res, err := prop.Propose(keyCtx, fsm.RegisterKey{DID: n.ServerDID(), KID: signing.KID(pub), PublicKey: pub, Source: "server-key", Purpose: "msgsig"})
	cancelKey()
	if err != nil {
		return n, fmt.Errorf("registering the server key: %w", err)
	}
	if res.Code != fsm.OK && res.Code != fsm.NoChange {
		return n, fmt.Errorf("registering the server key: %s", res.Code)
	}

	n.metrics.GaugeFunc("palaver_channels", "Channels in the replicated state.", func() float64 { return float64(n.channelCount()) })
	n.metrics.GaugeFunc("palaver_uptime_seconds", "Seconds since the node started.", func() float64 { return time.Since(n.started).Seconds() })
	n.metrics.GaugeFunc("palaver_raft_term", "Current Raft term.", func() float64 { return float64(n.raft.Status().Term) })
	n.metrics.GaugeFunc("palaver_raft_voters", "Voters in the Raft configuration this node knows.", func() float64 { return float64(n.raft.Status().Voters) })
	n.metrics.GaugeFunc("palaver_raft_applied_index", "Last applied Raft index.", func() float64 { return float64(n.raft.AppliedIndex()) })
	n.metrics.GaugeFunc("palaver_state_hash48", "First 48 bits of the SHA-256 of the replicated state: equal on replicas at the same applied index.", n.stateHash48)

	runCtx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.keepDataDirPrivate(runCtx)
	}()
	limiter := transport.NewIPLimiter(cfg.MaxConnsPerIP)
	if cfg.IRCAddr != "" {
		if n.ircLn, err = net.Listen("tcp", cfg.IRCAddr); err != nil {
			return n, fmt.Errorf("irc listener: %w", err)
		}
		n.serve(runCtx, n.ircLn, "tcp", limiter)
	}
	if cfg.TLSAddr != "" {
		cert, err := transport.LoadOrCreateCertificate(filepath.Join(cfg.DataDir, "tls"), cfg.TLSCertFile, cfg.TLSKeyFile, certHosts(cfg))
		if err != nil {
			return n, fmt.Errorf("tls certificate: %w", err)
		}
		ln, err := net.Listen("tcp", cfg.TLSAddr)
		if err != nil {
			return n, fmt.Errorf("tls listener: %w", err)
		}
		n.tlsLn = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		n.serve(runCtx, n.tlsLn, "tls", limiter)
	}
	n.signing = signingapi.New(signingapi.Config{
		ServerName: cfg.ServerName, BaseURL: cfg.BaseURL, ServerKey: n.serverKey, State: n.machine, Proposer: prop,
		Messages: n.events, Retirer: n.irc, Resolver: resolver, PeerKeyRetry: cfg.PeerKeyRetry,
		Logger: n.log.With("component", "signing"),
	})
	n.rest = rest.New(rest.Config{
		ServerName: cfg.ServerName, BaseURL: cfg.BaseURL, AllowedOrigins: cfg.AllowedOrigins,
		Tokens: n.irc, Health: n, Favorites: &favorites{machine: n.machine, prop: prop},
		Metrics: n.metrics, IRC: n.irc.Handle, IRCLimiter: limiter, Logger: n.log.With("component", "http"),
		State: n.machine, Events: n.events, Resolver: resolver, Evidence: n.signing,
		Linearize:  func(ctx context.Context) error { _, err := n.raft.ReadIndex(ctx); return err },
		RateLimits: rest.RateLimits{Off: cfg.NoFloodLimits},
		// Pages on localhost at any port may open WebSocket IRC only on a node that only they
		// can reach: bound to loopback, with a local base URL.
		LocalWebSocketOrigins: isLoopbackListener(n.httpLn) && rest.IsLocalOrigin(cfg.BaseURL),
		TrustedProxies:        cfg.TrustedProxies, HTTPLimits: cfg.HTTPLimits,
	})
	if err := n.signing.Mount(n.rest); err != nil {
		return n, err
	}
	if err := n.mountAgentSurfaces(); err != nil {
		return n, err
	}
	if err := n.mountAV(prop); err != nil {
		return n, err
	}
	n.serveClusterPlane()
	n.exchange.Start()
	if n.federation != nil {
		n.federation.Mount(n.rest.Engine())
		n.federation.Start()
	}
	if cfg.PprofAddr != "" {
		if err := n.startPprof(cfg.PprofAddr); err != nil {
			return n, err
		}
	}
	// WebSocket sessions live on their request's context: end them when the node stops.
	n.httpSrv = n.rest.HTTPServer(runCtx)
	httpLn := rest.SecurityHeadersListener(transport.LimitListener(n.httpLn, transport.NewIPLimiter(cfg.MaxHTTPConnsPerIP),
		func(addr net.Addr) {
			n.log.Debug("http connection over the per-client cap closed", "remote", addr.String(), "cap", cfg.MaxHTTPConnsPerIP)
		}))
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.httpSrv.Serve(httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("http server", "err", err)
		}
	}()
	n.log.Info("node started", "server_name", cfg.ServerName, "irc", addrOf(n.ircLn), "tls", addrOf(n.tlsLn), "http", addrOf(n.httpLn), "data", cfg.DataDir)
	return n, nil
}

func (n *Node) serve(ctx context.Context, ln net.Listener, kind string, limiter *transport.IPLimiter) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := transport.Serve(ctx, ln, kind, limiter, n.irc.Handle); err != nil && ctx.Err() == nil {
			n.log.Error("listener stopped", "kind", kind, "err", err)
		}
	}()
}

// Close stops the node: listeners first, then clients, Raft and the event store.
func (n *Node) Close() error {
	var errs []error
	n.once.Do(func() {
		if n.cancel != nil {
			n.cancel()
		}
		for _, ln := range []net.Listener{n.ircLn, n.tlsLn} {
			if ln != nil {
				ln.Close()
			}
		}
		if n.pprofSrv != nil {
			n.pprofSrv.Close()
		}
		if n.httpSrv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			n.httpSrv.Shutdown(ctx)
			cancel()
		} else if n.httpLn != nil {
			n.httpLn.Close()
		}
		if n.clusterSrv != nil {
			n.clusterSrv.Close()
		}
		n.closeAV()
		if n.irc != nil {
			n.irc.Close()
		}
		if n.federation != nil {
			n.federation.Close()
		}
		if n.exchange != nil {
			n.exchange.Close()
		}
		n.wg.Wait()
		if n.raft != nil {
			if err := n.raft.Close(); err != nil {
				errs = append(errs, fmt.Errorf("raft: %w", err))
			}
		}
		if n.render != nil { // after Raft: an Apply waiting on a full queue is drained first
			n.render.close()
		}
		if n.events != nil {
			if err := n.events.Close(); err != nil {
				errs = append(errs, fmt.Errorf("event store: %w", err))
			}
		}
	})
	return errors.Join(errs...)
}

// IRCAddr, TLSAddr and HTTPAddr are the bound listener addresses ("" when disabled).
func (n *Node) IRCAddr() string  { return addrOf(n.ircLn) }
func (n *Node) TLSAddr() string  { return addrOf(n.tlsLn) }
func (n *Node) HTTPAddr() string { return addrOf(n.httpLn) }

// ServerDID is the node's did:web identity (did:web:<node name>), under which its server key is
// published and registered through Raft. On a single node the node name is the server name.
func (n *Node) ServerDID() string { return "did:web:" + n.cfg.NodeName }

// Machine exposes the replicated state for tests and tools.
func (n *Node) Machine() *fsm.Machine { return n.machine }

// isLoopbackListener reports whether ln accepts only loopback connections.
func isLoopbackListener(ln net.Listener) bool {
	addr, ok := ln.Addr().(*net.TCPAddr)
	return ok && addr.IP.IsLoopback()
}

func addrOf(ln net.Listener) string {
	if ln == nil {
		return ""
	}
	return ln.Addr().String()
}

// Health reports the node's health object.
func (n *Node) Health() rest.Health {
	st := n.raft.Status()
	return rest.Health{
		ServerName: n.cfg.ServerName, Connections: n.irc.Connections(), Channels: n.channelCount(),
		UptimeSecs: int64(time.Since(n.started).Seconds()), AV: n.avRunning(), Version: n.cfg.Version,
		Node: n.cfg.NodeName, Role: st.Role, Term: st.Term,
	}
}

// channelCount counts channels that have members.
func (n *Node) channelCount() int {
	count := 0
	n.machine.Read(func(st *fsm.State) {
		for _, ch := range st.Channels {
			if len(ch.Members) > 0 {
				count++
			}
		}
	})
	return count
}

func certHosts(cfg Config) []string {
	hosts := []string{cfg.ServerName, "localhost", "127.0.0.1", "::1"}
	if h, _, err := net.SplitHostPort(cfg.TLSAddr); err == nil && h != "" {
		hosts = append(hosts, h)
	}
	return hosts
}

func readMOTD(path string) ([]string, error) {
	if path == "" {
		return []string{"Welcome to Palaver. Identity is a DID: authenticate with SASL ATPROTO-CHALLENGE, or chat as a guest."}, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("motd: %w", err)
	}
	return strings.Split(strings.TrimRight(string(data), "\n"), "\n"), nil
}

// proposer stamps commands with a request id, this node's name and the time, and proposes them.
// It returns once the entry's events have been rendered here too (rendered), so that a command's
// own effects reach its client before the command's replies.
type proposer struct {
	store    *raft.Store
	node     string
	rendered *renderQueue
}

func (p *proposer) Propose(ctx context.Context, cmd fsm.Command) (fsm.Result, error) {
	data, err := fsm.Encode(cmd, ulid.Make().String(), p.node, time.Now().UnixMilli())
	if err != nil {
		return fsm.Result{}, err
	}
	resp, index, err := p.store.Propose(ctx, data)
	if err != nil {
		return fsm.Result{}, fmt.Errorf("propose: %w", err)
	}
	if p.rendered != nil {
		// The entry is applied: its result stands even if ctx ends before its events are
		// rendered (they are rendered later, outside the command).
		_ = p.rendered.waitRendered(ctx, index)
	}
	res, ok := resp.(fsm.Result)
	if !ok {
		return fsm.Result{}, fmt.Errorf("propose: unexpected state machine response %T", resp)
	}
	return res, nil
}

// favorites adapts the replicated per-DID favourites to the REST API.
type favorites struct {
	machine *fsm.Machine
	prop    *proposer
}

func (f *favorites) Favorites(did string) []string {
	var out []string
	f.machine.Read(func(st *fsm.State) { out = append([]string{}, st.Favorites[did]...) })
	return out
}

func (f *favorites) SetFavorites(ctx context.Context, did string, list []string) ([]string, error) {
	res, err := f.prop.Propose(ctx, fsm.SetFavorites{DID: did, Favorites: list})
	if err != nil {
		return nil, err
	}
	if res.Code != fsm.OK {
		return nil, fmt.Errorf("favorites: %s", res.Code)
	}
	if res.List == nil {
		return []string{}, nil
	}
	return res.List, nil
}

// GossipAddr is the bound memberlist address ("" on an unclustered node).
func (n *Node) GossipAddr() string { return n.raft.GossipAddr() }
