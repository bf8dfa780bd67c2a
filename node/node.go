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

	"github.com/palaver-chat/palaver/federation/exchange"
	"github.com/palaver-chat/palaver/federation/peering"
	"github.com/palaver-chat/palaver/gateway/assist"
	"github.com/palaver-chat/palaver/gateway/coord"
	"github.com/palaver-chat/palaver/gateway/irc"
	"github.com/palaver-chat/palaver/gateway/media"
	"github.com/palaver-chat/palaver/gateway/metrics"
	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/gateway/sasl"
	"github.com/palaver-chat/palaver/gateway/signingapi"
	"github.com/palaver-chat/palaver/gateway/transport"
	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/linkroute"
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/node/stream"
	"github.com/palaver-chat/palaver/raft"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// Node is one running Palaver node.
type Node struct {
	cfg     Config
	log     *slog.Logger
	machine *fsm.Machine
	streams *stream.Streams // applied entries and stored chat events, the seams surfaces plug into
	prop    *proposer       // the one proposer: returns after this node applied and rendered
	raft    *raft.Store
	events  *eventstore.Store
	irc     *irc.Server
	chat    *chat.Service // the one path by which chat events are written (chat.go)
	rest    *rest.Server
	metrics *metrics.Set
	started time.Time

	serverKey ed25519.PrivateKey
	coord     *coord.Service // the coordination surface (coord.go)
	signing   *signingapi.API
	exchange  *exchange.Exchange
	resolver  *keyresolver.Resolver

	incarnation string // this process: sessions of earlier ones are purged at start
	ircLimiter  *transport.IPLimiter
	runCtx      context.Context // ends at Close; cancel ends it

	federation *peering.Federation // nil without peers
	allow      *exchange.AllowList // the exchange's peers: live nodes and configured servers
	media      *media.Service      // uploads, media proxies, encryption keys (media.go)

	disconnects *assist.Disconnects       // recent disconnects, for the assistance tools (assist.go)
	av          atomic.Pointer[avSurface] // calls (av.go); nil until mounted

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
//
// Start is a flat list of constructors, in dependency order. Each surface builds itself in its own
// method (in its own file) from what the earlier ones opened, and subscribes to the streams
// (n.streams) and plugs into the IRC edge (n.irc) there: a new surface is one line here.
func Start(ctx context.Context, cfg Config, logger *slog.Logger) (n *Node, err error) {
	cfg = cfg.derived()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if logger == nil {
		logger = slog.Default()
	}
	if err := secureDataDir(cfg.DataDir); err != nil {
		return nil, err
	}
	n = &Node{cfg: cfg, log: logger.With("node", cfg.NodeName), started: time.Now(),
		incarnation: ulid.Make().String(), metrics: metrics.New()}
	defer func() {
		if err != nil {
			n.Close()
			n = nil
		}
	}()
	steps := []struct {
		name string
		run  func(context.Context) error
	}{
		{"streams", n.openStreams},        // the state machine and its streams (streams.go)
		{"http listener", n.listenHTTP},   // its address is gossiped
		{"raft", n.openRaft},              // replicated state, caught up before serving reads
		{"event store", n.openEventStore}, // durable chat events
		{"server key", n.loadServerKey},   // this node's signing key
		{"chat", n.startChat},             // the message service (chat.go)
		{"federation", n.startFederation}, // peer servers (federation.go); nil without --peer
		{"irc", n.startIRC},               // the IRC edge
		{"playback", n.mountPlayback},     // channel events in IRC history (playback.go)
		{"exchange", n.startExchange},     // the chat plane between the cluster's nodes (cluster.go)
		{"leader jobs", n.startLeaderJobs},
		{"registration", n.registerInstance}, // purge the previous process's sessions, publish the key
		{"metrics", n.registerGauges},
		{"operator", n.startOperator},  // the operator plane's report and gauges (operator.go)
		{"irc listeners", n.listenIRC}, // bound now (discovery names them), served by "serve irc"
		{"rest", n.buildREST},
		{"signing api", n.mountSigning},
		{"agent surfaces", n.mountAgents}, // MCP and discovery (agents.go)
		{"coordination", n.mountCoord},    // ACT, tasks, agents, governance, the audit timeline (coord.go)
		{"media", n.mountMedia},           // uploads, media proxies, keys for encrypted channels (media.go)
		{"assist", n.mountAssist},         // assistance tools and /agent/session (assist.go)
		{"av", n.mountAV},                 // calls: the forwarding unit and its routes (av.go)
		{"cluster plane", n.serveClusterPlane},
		{"pprof", n.startPprofIfAsked},
		{"serve irc", n.serveIRC}, // after every surface: IRC seams close at the first connection
		{"http", n.serveHTTP},     // WebSocket IRC too
	}
	for _, step := range steps {
		if err := step.run(ctx); err != nil {
			return n, fmt.Errorf("%s: %w", step.name, err)
		}
	}
	n.log.Info("node started", "server_name", cfg.ServerName, "irc", addrOf(n.ircLn), "tls", addrOf(n.tlsLn), "http", addrOf(n.httpLn), "data", cfg.DataDir)
	return n, nil
}

// listenHTTP opens the HTTP listener first: its address (the base URL) is gossiped to the other
// nodes, and runCtx starts here, for what runs until Close.
func (n *Node) listenHTTP(context.Context) (err error) {
	if n.httpLn, err = net.Listen("tcp", n.cfg.HTTPAddr); err != nil {
		return err
	}
	if n.cfg.BaseURL == "" {
		n.cfg.BaseURL = "http://" + n.httpLn.Addr().String()
	}
	var runCtx context.Context
	runCtx, n.cancel = context.WithCancel(context.Background())
	n.runCtx = runCtx
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.keepDataDirPrivate(runCtx)
	}()
	return nil
}

// openRaft opens Raft with the state machine, waits for a leader and applies every committed
// entry before the node serves reads from its replica.
func (n *Node) openRaft(ctx context.Context) (err error) {
	cfg := n.cfg
	identity, err := clusterIdentity(cfg, n.log)
	if err != nil {
		return err
	}
	keys := &nodeKeys{machine: n.machine}
	n.raft, err = raft.Open(ctx, raft.Config{
		NodeID: cfg.NodeName, Dir: filepath.Join(cfg.DataDir, "raft"), BindAddr: cfg.RaftAddr,
		AdvertiseAddr: cfg.RaftAdvertise, Bootstrap: len(cfg.Join) == 0,
		GossipAddr: cfg.GossipAddr, GossipAdvertise: cfg.GossipAdvertise, ClusterAddr: cfg.ClusterAddr,
		ClusterAdvertise: cfg.ClusterAdvertise, Join: cfg.Join, MaxVoters: cfg.MaxVoters,
		DeadNodeGrace: cfg.DeadNodeGrace, Meta: map[string]string{metaDID: n.ServerDID(), metaHTTP: cfg.BaseURL},
		OnNodeRemoved: n.purgeRemovedNode,
		Logger:        n.log,
		OnApply:       n.observeApply,
		Network:       cfg.Faults.network(), LogWriteDelay: cfg.Faults.logWriteDelay(), Identity: identity,
		NodeKeys: keys,
		Timing:   cfg.Raft,
		// A command the servers of an earlier version cannot apply waits until they are upgraded.
		FeatureLevel: fsm.Level, EntryLevel: fsm.EntryLevel,
	}, n.machine)
	if err != nil {
		return err
	}
	n.prop = &proposer{store: n.raft, node: cfg.NodeName, rendered: n.streams.Applied}
	keys.prop.Store(n.prop)
	waitCtx, cancelWait := context.WithTimeout(ctx, 30*time.Second)
	defer cancelWait()
	if err := n.raft.WaitForLeader(waitCtx); err != nil {
		return fmt.Errorf("waiting for a leader: %w", err)
	}
	// Apply every committed entry before serving reads from the replica.
	if _, err := n.raft.ReadIndex(waitCtx); err != nil {
		return fmt.Errorf("waiting for a leader: %w", err)
	}
	return nil
}

// startLeaderJobs registers the jobs that run while this node leads: the purge of departed
// nodes' sessions and the channel expiry sweep.
func (n *Node) startLeaderJobs(context.Context) error {
	n.raft.OnLeadership(n.purgeDepartedNodes)
	n.raft.OnLeadership(n.sweepChannels)
	return nil
}

// observeApply records how long Raft took to apply an entry.
func (n *Node) observeApply(d time.Duration) { n.metrics.RaftApplySeconds.Observe(d.Seconds()) }

// openEventStore opens the durable store of chat events, and the resolver and SASL verifier that
// the edges share.
func (n *Node) openEventStore(ctx context.Context) (err error) {
	n.events, err = eventstore.Open(ctx, eventstore.Options{Path: filepath.Join(n.cfg.DataDir, "events.db"), Logger: n.log,
		Scope: n.channelScope})
	if err != nil {
		return err
	}
	n.resolver = keyresolver.New(keyresolver.Options{PLCDirectory: n.cfg.PLCDirectory, AllowPrivateAddresses: n.cfg.AllowPrivateDID,
		Logger: n.log.With("component", "keyresolver")})
	return nil
}

// loadServerKey loads (or creates) this node's server key; only its public half leaves the node.
func (n *Node) loadServerKey(context.Context) (err error) {
	n.serverKey, err = loadOrCreateServerKey(filepath.Join(n.cfg.DataDir, "keys"))
	return err
}

// startIRC builds the IRC edge; it subscribes to the streams in its constructor.
func (n *Node) startIRC(context.Context) error {
	cfg := n.cfg
	motd, err := readMOTD(cfg.MOTDFile)
	if err != nil {
		return err
	}
	password, err := readPasswordFile(cfg.IRCPasswordFile)
	if err != nil {
		return err
	}
	n.irc = irc.New(irc.Config{
		ServerName: cfg.ServerName, NodeName: cfg.NodeName, Incarnation: n.incarnation, Version: cfg.Version,
		MOTD: motd, Opers: cfg.Opers, OperDIDs: cfg.OperDIDs, NoGuests: cfg.NoGuests, Password: password,
		FloodLimits: !cfg.NoFloodLimits, JoinHistory: cfg.JoinHistory,
		Logger: n.log.With("component", "irc"), Metrics: n.metrics, Now: cfg.Clock,
		Messages: n.chat, KeyLifetime: cfg.SigningKeyLifetime, Streams: n.streams,
		Links:     linkroute.New(n.linkPeering(), n.machine),
		PingAfter: cfg.PingAfter, PingTimeout: cfg.PingTimeout, SendQBytes: cfg.SendQBytes,
		KeySweepEvery: cfg.KeySweepEvery, Disconnects: n.disconnectRecord(),
		Registration: cfg.AccountRegistration, Metadata3: cfg.Metadata3,
	}, n.machine, n.prop, cfg.Faults.ircHistory(n.events), &sasl.Verifier{Resolver: n.resolver, ChallengeTTL: cfg.ChallengeTTL})
	return nil
}

// registerInstance ends the sessions an earlier process of this node held (they died with it) and
// publishes this node's public key to every replica (the private key stays in keys/).
func (n *Node) registerInstance(ctx context.Context) error {
	purgeCtx, cancelPurge := context.WithTimeout(ctx, 30*time.Second)
	_, err := n.prop.Propose(purgeCtx, fsm.PurgeNode{Node: n.cfg.NodeName, Keep: n.incarnation, Reason: "Server restarted"})
	cancelPurge()
	if err != nil {
		return fmt.Errorf("purging old sessions: %w", err)
	}
	pub := n.serverKey.Public().(ed25519.PublicKey)
	keyCtx, cancelKey := context.WithTimeout(ctx, 30*time.Second)
	defer cancelKey()
	res, err := n.prop.Propose(keyCtx, fsm.RegisterKey{DID: n.ServerDID(), KID: signing.KID(pub), PublicKey: pub, Source: "server-key", Purpose: "msgsig"})
	if err != nil {
		return fmt.Errorf("registering the server key: %w", err)
	}
	if res.Code != fsm.OK && res.Code != fsm.NoChange {
		return fmt.Errorf("registering the server key: %s", res.Code)
	}
	return nil
}

// registerGauges exports the node's gauges.
func (n *Node) registerGauges(context.Context) error {
	n.metrics.GaugeFunc("palaver_channels", "Channels in the replicated state.", func() float64 { return float64(n.channelCount()) })
	n.metrics.GaugeFunc("palaver_uptime_seconds", "Seconds since the node started.", func() float64 { return time.Since(n.started).Seconds() })
	n.metrics.GaugeFunc("palaver_raft_term", "Current Raft term.", func() float64 { return float64(n.raft.Status().Term) })
	n.metrics.GaugeFunc("palaver_raft_voters", "Voters in the Raft configuration this node knows.", func() float64 { return float64(n.raft.Status().Voters) })
	n.metrics.GaugeFunc("palaver_raft_applied_index", "Last applied Raft index.", func() float64 { return float64(n.raft.AppliedIndex()) })
	return nil
}

// listenIRC opens the IRC listeners (plain and TLS); serveIRC serves them once the node is built.
func (n *Node) listenIRC(context.Context) (err error) {
	cfg := n.cfg
	n.ircLimiter = transport.NewIPLimiter(cfg.MaxConnsPerIP)
	if cfg.IRCAddr != "" {
		if n.ircLn, err = net.Listen("tcp", cfg.IRCAddr); err != nil {
			return err
		}
	}
	if cfg.TLSAddr != "" {
		cert, err := transport.LoadOrCreateCertificate(filepath.Join(cfg.DataDir, "tls"), cfg.TLSCertFile, cfg.TLSKeyFile, certHosts(cfg))
		if err != nil {
			return fmt.Errorf("tls certificate: %w", err)
		}
		ln, err := net.Listen("tcp", cfg.TLSAddr)
		if err != nil {
			return fmt.Errorf("tls listener: %w", err)
		}
		n.tlsLn = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	}
	return nil
}

// serveIRC accepts IRC connections. It comes after every surface was built: the IRC edge's seams
// (verbs, message checks, join tags) close at its first connection.
func (n *Node) serveIRC(context.Context) error {
	if n.ircLn != nil {
		n.serve(n.runCtx, n.ircLn, "tcp", n.ircLimiter)
	}
	if n.tlsLn != nil {
		n.serve(n.runCtx, n.tlsLn, "tls", n.ircLimiter)
	}
	return nil
}

// buildREST builds the public HTTP server's engine with the REST routes.
func (n *Node) buildREST(context.Context) error {
	cfg := n.cfg
	n.signing = signingapi.New(signingapi.Config{
		ServerName: cfg.ServerName, BaseURL: cfg.BaseURL, ServerKey: n.serverKey, State: n.machine, Proposer: n.prop,
		Messages: n.events, Retirer: n.irc, Resolver: n.resolver, PeerKeyRetry: cfg.PeerKeyRetry,
		Logger: n.log.With("component", "signing"),
	})
	n.rest = rest.New(rest.Config{
		ServerName: cfg.ServerName, BaseURL: cfg.BaseURL, AllowedOrigins: cfg.AllowedOrigins,
		Tokens: n.irc, Health: n, Favorites: &favorites{machine: n.machine, prop: n.prop}, Passwords: n.irc,
		Metrics: n.metrics, IRC: n.irc.Handle, IRCLimiter: n.ircLimiter, Logger: n.log.With("component", "http"),
		State: n.machine, Events: n.events, Resolver: n.resolver, Evidence: n.signing,
		Linearize:  n.linearize,
		RateLimits: rest.RateLimits{Off: cfg.NoFloodLimits},
		// Pages on localhost at any port may open WebSocket IRC only on a node that only they
		// can reach: bound to loopback, with a local base URL.
		LocalWebSocketOrigins: isLoopbackListener(n.httpLn) && rest.IsLocalOrigin(cfg.BaseURL),
		TrustedProxies:        cfg.TrustedProxies, HTTPLimits: cfg.HTTPLimits,
	})
	return nil
}

// linearize waits until this node's replica has applied everything committed when it was called.
func (n *Node) linearize(ctx context.Context) error {
	_, err := n.raft.ReadIndex(ctx)
	return err
}

// mountSigning mounts the signing, verify and evidence routes.
func (n *Node) mountSigning(context.Context) error { return n.signing.Mount(n.rest) }

// mountAgents mounts MCP and the discovery documents.
func (n *Node) mountAgents(context.Context) error { return n.mountAgentSurfaces() }

// startPprofIfAsked serves runtime profiles on --pprof-addr.
func (n *Node) startPprofIfAsked(context.Context) error {
	if n.cfg.PprofAddr == "" {
		return nil
	}
	return n.startPprof(n.cfg.PprofAddr)
}

// serveHTTP starts the exchange's and federation's loops and serves the public HTTP server.
func (n *Node) serveHTTP(context.Context) error {
	n.exchange.Start()
	if n.federation != nil {
		n.federation.Mount(n.rest.Engine())
		n.exchange.MountPublic(n.rest.Engine()) // the configured servers' streams
		n.federation.Start()
	}
	// WebSocket sessions live on their request's context: end them when the node stops.
	n.httpSrv = n.rest.HTTPServer(n.runCtx)
	httpLn := rest.SecurityHeadersListener(transport.LimitListener(n.httpLn, transport.NewIPLimiter(n.cfg.MaxHTTPConnsPerIP),
		func(addr net.Addr) {
			n.log.Debug("http connection over the per-client cap closed", "remote", addr.String(), "cap", n.cfg.MaxHTTPConnsPerIP)
		}))
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.httpSrv.Serve(httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("http server", "err", err)
		}
	}()
	return nil
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
		if n.streams != nil { // after Raft: an Apply waiting on a full queue is released either way
			n.streams.Close()
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
		UptimeSecs: int64(time.Since(n.started).Seconds()), AV: n.avRunning(), AVError: n.avError(), Version: n.cfg.Version,
		Node: n.cfg.NodeName, Role: st.Role, Term: st.Term, Replication: n.replication(),
	}
}

// replication is the health answer's view of the exchange (nil when unclustered, or when the
// store cannot be read).
func (n *Node) replication() *rest.Replication {
	if n.exchange == nil || n.raft.ClusterHTTPListener() == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	peers, err := n.exchange.Replication(ctx)
	if err != nil {
		n.log.Debug("health: replication", "err", err)
		return nil
	}
	r := &rest.Replication{OK: true, Peers: peers}
	if r.Peers == nil {
		r.Peers = []exchange.PeerReplication{}
	}
	for _, p := range peers {
		r.OK = r.OK && !p.Behind && p.DeadLetters == 0
	}
	return r
}

// channelCount counts channels that have members.
func (n *Node) channelCount() int {
	count := 0
	n.machine.Read(func(st *fsm.State) {
		for ch := range st.Channels() {
			if ch.MemberCount() > 0 {
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

// readMOTD reads the message of the day from path, one line per line of the file. No path, or a
// file with nothing but blank space, is no MOTD: clients get 422 ERR_NOMOTD.
func readMOTD(path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("motd: %w", err)
	}
	text := strings.TrimRight(strings.ReplaceAll(string(data), "\r\n", "\n"), " \t\r\n")
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	return strings.Split(text, "\n"), nil
}

// readPasswordFile reads the IRC connection password: the file's first line ("" for no file).
func readPasswordFile(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("irc password: %w", err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	line = strings.TrimSuffix(line, "\r")
	if line == "" {
		return "", fmt.Errorf("irc password: %s has an empty first line", path)
	}
	return line, nil
}

// proposer stamps commands with a request id, this node's name and the time, and proposes them.
// It keeps the contract of irc.Proposer: it returns once this node applied the entry and every
// Backpressure subscriber of the Applied stream handled it (rendered), so that a command's own
// effects reach its client before the command's replies. The node has exactly one (Node.prop).
type proposer struct {
	store    *raft.Store
	node     string
	rendered *stream.Applied
}

func (p *proposer) Propose(ctx context.Context, cmd fsm.Command) (fsm.Result, error) {
	data, err := fsm.Encode(cmd, ulid.Make().String(), p.node, time.Now().UnixMilli())
	if err != nil {
		return fsm.Result{}, err
	}
	resp, index, err := p.store.Propose(ctx, data)
	if errors.Is(err, raft.ErrClusterUpgrading) {
		// The edges answer this one in words of their own (they know fsm, not raft).
		return fsm.Result{}, fmt.Errorf("propose: %w: %w", fsm.ErrClusterUpgrading, err)
	}
	if err != nil {
		return fsm.Result{}, fmt.Errorf("propose: %w", err)
	}
	if p.rendered != nil {
		// The entry is applied: its result stands even if ctx ends before its events are
		// rendered (they are rendered later, outside the command).
		_ = p.rendered.WaitRendered(ctx, index)
	}
	res, ok := resp.(fsm.Result)
	if !ok {
		return fsm.Result{}, fmt.Errorf("propose: unexpected state machine response %T", resp)
	}
	return res, nil
}

// linkPeering is federation as linked-channel routing asks of it: nil (no interface holding a nil
// pointer) without peers.
func (n *Node) linkPeering() linkroute.Peering {
	if n.federation == nil {
		return nil
	}
	return n.federation
}

// favorites adapts the replicated per-DID favourites to the REST API.
type favorites struct {
	machine *fsm.Machine
	prop    *proposer
}

func (f *favorites) Favorites(did string) []string {
	var out []string
	f.machine.Read(func(st *fsm.State) { out = st.Favorites(did) })
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
