package node

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
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
	"github.com/palaver-chat/palaver/gateway/irc"
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

// Node is one running Palaver node: what Start built and its public methods need, and the list
// of what Close stops.
type Node struct {
	cfg       Config
	faults    faults
	machine   *fsm.Machine
	streams   *stream.Streams // applied entries and stored chat events, the seams surfaces plug into
	events    *eventstore.Store
	serverKey ed25519.PrivateKey
	raft      *raft.Store
	irc       *irc.Server
	exchange  *exchange.Exchange
	rest      *rest.Server
	health    *health
	av        *avSurface
	addrs     addrs // the bound listeners

	close func() error // stops what Start started, backwards, once
}

// addrs are the node's bound listener addresses ("" when disabled).
type addrs struct{ irc, tls, http, pprof string }

// keptTagmsgLevel is the feature level (raft/fsm.Level) of the first version whose nodes keep
// TAGMSGs apart from messages (chat.Config.PersistTags): a node of v0.1.0 (level 0) would store
// a kept TAGMSG copied to it as a message and serve it to every reader, so none is kept while
// such a node is a server of the cluster.
const keptTagmsgLevel = 1

// Start opens the node's state and starts its listeners. The node runs until Close.
//
// Start reads top to bottom: each step builds one part from the parts before it, given as
// arguments, and what it starts is added to the stop list as it starts. A surface subscribes to
// the streams and plugs into the IRC edge in its own step, before the listeners serve.
func Start(ctx context.Context, cfg Config, logger *slog.Logger) (_ *Node, err error) {
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
	log := logger.With("node", cfg.NodeName)
	started, incarnation := time.Now(), ulid.Make().String() // sessions of earlier processes are purged
	fl := cfg.Faults.inject()
	mset := metrics.New()
	var stop stopList
	defer func() {
		if err != nil {
			stop.close()
		}
	}()

	// The replicated state, and the durable store of chat events (which asks it a channel's scope).
	machine := fsm.New(log)
	machine.SetLocalNode(cfg.NodeName)
	events, err := eventstore.Open(ctx, eventstore.Options{Path: filepath.Join(cfg.DataDir, "events.db"), Logger: log,
		Scope: channelScope{machine}.scope})
	if err != nil {
		return nil, fmt.Errorf("event store: %w", err)
	}
	stop.add("event store", closeErr(events.Close))
	// The streams come before any surface, so that each subscribes in its constructor.
	streams := newStreams(machine, log, fl)
	stop.add("streams", closeNoErr(streams.Close)) // after Raft: an Apply waiting on a full queue is released either way
	serverKey, err := loadOrCreateServerKey(filepath.Join(cfg.DataDir, "keys"))
	if err != nil {
		return nil, fmt.Errorf("server key: %w", err)
	}
	keys := serverKeys{machine}
	resolver := keyresolver.New(keyresolver.Options{PLCDirectory: cfg.PLCDirectory, AllowPrivateAddresses: cfg.AllowPrivateDID,
		Logger: log.With("component", "keyresolver")})

	// The HTTP listener opens before Raft: its address (the base URL) is gossiped.
	httpLn, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("http listener: %w", err)
	}
	stop.add("http listener", listenerStop{httpLn}) // served, then shut down, by "http"
	if cfg.BaseURL == "" {
		cfg.BaseURL = "http://" + httpLn.Addr().String()
	}
	stop.add("data directory", startTask(dataDirKeeper{cfg.DataDir, log}.run))

	rf, prop, err := openRaft(ctx, cfg, log, fl, machine, streams.Applied, mset)
	if err != nil {
		return nil, fmt.Errorf("raft: %w", err)
	}
	stop.add("raft", closeErr(rf.Close))
	members := newMembers(rf)

	history := fl.history(events) // as the chat service writes it and the IRC edge reads it
	msgs := chat.New(chat.Config{ // the one path by which chat events are written
		State: machine, Store: history, Key: serverKey, Stored: streams.Stored,
		NodeName: cfg.NodeName, Logger: log.With("component", "chat"), PersistTags: cfg.TagmsgPersist,
		PersistReady: func() bool { return rf.ClusterLevel() >= keptTagmsgLevel },
	})
	fed, err := newFederation(cfg, log, fl, members, serverKey, msgs, events, machine, prop, streams, resolver, mset)
	if err != nil {
		return nil, fmt.Errorf("federation: %w", err)
	}
	if fed != nil {
		stop.add("federation", closeNoErr(fed.Close))
	}
	disconnects := assist.NewDisconnects() // the IRC edge files, the assistance tools read
	ircSrv, err := newIRC(cfg, log, incarnation, mset, machine, prop, streams, msgs, history, fed, disconnects, resolver,
		linkNodes{rf, cfg.ServerInfo}.list)
	if err != nil {
		return nil, fmt.Errorf("irc: %w", err)
	}
	stop.add("irc", closeNoErr(ircSrv.Close))
	// Channel events in IRC history (gateway/irc/playback.go).
	if err := ircSrv.EnablePlayback(events, streams); err != nil {
		return nil, fmt.Errorf("playback: %w", err)
	}
	ex, err := newExchange(cfg, log, fl, rf, members, keys, serverKey, events, msgs, ircSrv, streams, fed, mset)
	if err != nil {
		return nil, fmt.Errorf("exchange: %w", err)
	}
	stop.add("exchange", closeNoErr(ex.Close))

	// Jobs of the leader, and this process's registration.
	rf.OnLeadership(purgeDeparted{rf, machine, prop, log}.run)
	rf.OnLeadership(channelSweep{cfg, prop, log}.run)
	if err := registerInstance(ctx, cfg, incarnation, prop, serverKey); err != nil {
		return nil, fmt.Errorf("registration: %w", err)
	}
	registerGauges(mset, machine, rf, started)
	// The operator plane: the node's part of its report, its gauges, and backups. Raft asks for
	// them through setters: they read the exchange, which reads Raft.
	report := operatorReport{cfg, log, events, rf, ex}
	rf.SetOperatorReport(report.report)
	registerOperatorGauges(mset, cfg, rf, report)
	rf.SetBackup(backups{cfg, rf, log}.write)

	// The IRC listeners are bound now (discovery names them) and served last.
	ircLimiter := transport.NewIPLimiter(cfg.MaxConnsPerIP)
	ircLn, tlsLn, err := listenIRC(cfg)
	if err != nil {
		return nil, fmt.Errorf("irc listeners: %w", err)
	}
	for _, ln := range []net.Listener{ircLn, tlsLn} {
		if ln != nil {
			stop.add("irc listener", listenerStop{ln})
		}
	}
	// Calls: the forwarding unit and its gateway, before the REST server, whose health reports them.
	avs, err := newAV(cfg, log, machine, prop, avKeys{key: serverKey, did: serverDID(cfg), servers: keys}, rf, serverVoice{cfg, log, msgs, ircSrv}, mset)
	if err != nil {
		return nil, fmt.Errorf("av: %w", err)
	}
	stop.add("av", avs)
	hl := &health{cfg: cfg, started: started, log: log, raft: rf, irc: ircSrv, machine: machine, exchange: ex, av: avs}
	sign := signingapi.New(signingapi.Config{
		ServerName: cfg.ServerName, BaseURL: cfg.BaseURL, ServerKey: serverKey, State: machine, Proposer: prop,
		Messages: events, Retirer: ircSrv, Resolver: resolver, PeerKeyRetry: cfg.PeerKeyRetry,
		Logger: log.With("component", "signing"),
	})
	rs := newREST(cfg, log, httpLn, ircSrv, ircLimiter, hl, machine, prop, mset, events, resolver, sign, rf)

	// The surfaces on the REST server (and the IRC edge).
	if err := sign.Mount(rs); err != nil {
		return nil, fmt.Errorf("signing api: %w", err)
	}
	if err := mountAgents(cfg, log, machine, rs, addrOf(ircLn), addrOf(tlsLn)); err != nil { // MCP and discovery
		return nil, fmt.Errorf("agent surfaces: %w", err)
	}
	if err := mountCoord(cfg, log, machine, prop, serverKey, rs, ircSrv, streams, rf); err != nil {
		return nil, fmt.Errorf("coordination: %w", err)
	}
	med, err := newMedia(ctx, cfg, log, machine, prop, rf, mset, resolver, serverKey)
	if err != nil {
		return nil, fmt.Errorf("media: %w", err)
	}
	stop.add("media", startTask(med.Run)) // retention, deleted uploads' bytes, copies on other nodes
	if err := med.Mount(rs); err != nil {
		return nil, fmt.Errorf("media: %w", err)
	}
	if err := mountAssist(cfg, log, machine, events, disconnects, streams, fed, ircSrv, rf, ex, avs, ircLn != nil, tlsLn != nil, rs); err != nil {
		return nil, fmt.Errorf("assist: %w", err)
	}
	if err := mountAV(cfg, log, avs, machine, prop, rf, rs, ircSrv, streams, mset); err != nil {
		return nil, fmt.Errorf("av: %w", err)
	}

	// Serving: the cluster plane, profiles, then IRC (after every surface: the IRC edge's seams
	// close at its first connection) and HTTP.
	auth := clusterAuth{rf}
	if srv, ln := clusterPlane(log, rf, ex, med, auth, keys); srv != nil {
		stop.add("cluster plane", startServer("cluster http", srv, ln, log, nil))
	}
	pprofAddr := ""
	if cfg.PprofAddr != "" {
		srv, ln, err := newPprof(cfg.PprofAddr, log, mset, rf, machine)
		if err != nil {
			return nil, fmt.Errorf("pprof: %w", err)
		}
		pprofAddr = ln.Addr().String()
		stop.add("pprof", startServer("pprof", srv, ln, log, nil))
	}
	for _, l := range []struct {
		kind string
		ln   net.Listener
	}{{"tcp", ircLn}, {"tls", tlsLn}} {
		if l.ln != nil {
			stop.add("irc "+l.kind, startTask(ircListener{l.ln, l.kind, ircLimiter, ircSrv, log}.serve))
		}
	}
	ex.Start()
	if fed != nil {
		fed.Mount(rs.Engine())
		ex.MountPublic(rs.Engine()) // the configured servers' streams
		fed.Start()
	}
	serveHTTP(&stop, cfg, log, rs, httpLn)
	// Calls stop first, before the HTTP server ends their signalling sessions: a stopping host
	// leaves its calls to the leader, which ends them ("the hosting server is gone"), rather than
	// have each participant's end of session proposed as a leave.
	stop.add("calls", avs)

	n := &Node{cfg: cfg, faults: fl, machine: machine, streams: streams, events: events, serverKey: serverKey,
		raft: rf, irc: ircSrv, exchange: ex, rest: rs, health: hl, av: avs,
		addrs: addrs{irc: addrOf(ircLn), tls: addrOf(tlsLn), http: addrOf(httpLn), pprof: pprofAddr},
		close: sync.OnceValue(stop.close)}
	log.Info("node started", "server_name", cfg.ServerName, "irc", n.addrs.irc, "tls", n.addrs.tls, "http", n.addrs.http, "data", cfg.DataDir)
	return n, nil
}

// openRaft opens Raft with the state machine, waits for a leader and applies every committed
// entry before the node serves reads from its replica. It returns the node's one proposer.
//
// Raft takes two parts that propose (the purge of a removed node's sessions, the pins of node
// keys) before it returns the store they propose through: they hold a raftProposer, which
// answers an error until Open has returned.
func openRaft(ctx context.Context, cfg Config, log *slog.Logger, fl faults, machine *fsm.Machine, applied *stream.Applied, mset *metrics.Set) (*raft.Store, *proposer, error) {
	identity, err := clusterIdentity(cfg, log)
	if err != nil {
		return nil, nil, err
	}
	network, logWriteDelay := fl.raft()
	late := &raftProposer{}
	store, err := raft.Open(ctx, raft.Config{
		NodeID: cfg.NodeName, Dir: filepath.Join(cfg.DataDir, "raft"), BindAddr: cfg.RaftAddr,
		AdvertiseAddr: cfg.RaftAdvertise, Bootstrap: len(cfg.Join) == 0,
		GossipAddr: cfg.GossipAddr, GossipAdvertise: cfg.GossipAdvertise, ClusterAddr: cfg.ClusterAddr,
		ClusterAdvertise: cfg.ClusterAdvertise, Join: cfg.Join, MaxVoters: cfg.MaxVoters,
		DeadNodeGrace: cfg.DeadNodeGrace, Meta: map[string]string{metaDID: serverDID(cfg), metaHTTP: cfg.BaseURL, metaInfo: cfg.ServerInfo},
		OnNodeRemoved: removedNodePurge{late, log}.run,
		Logger:        log,
		OnApply:       applyTimer{mset}.observe,
		Network:       network, LogWriteDelay: logWriteDelay, Identity: identity,
		NodeKeys: nodeKeys{machine: machine, prop: late},
		Timing:   cfg.Raft,
		// A command the servers of an earlier version cannot apply waits until they are upgraded.
		FeatureLevel: fsm.Level, EntryLevel: fsm.EntryLevel,
	}, machine)
	if err != nil {
		return nil, nil, err
	}
	prop := &proposer{store: store, node: cfg.NodeName, rendered: applied}
	late.p.Store(prop)
	waitCtx, cancelWait := context.WithTimeout(ctx, 30*time.Second)
	defer cancelWait()
	if err := store.WaitForLeader(waitCtx); err != nil {
		store.Close()
		return nil, nil, fmt.Errorf("waiting for a leader: %w", err)
	}
	// Apply every committed entry before serving reads from the replica.
	if _, err := store.ReadIndex(waitCtx); err != nil {
		store.Close()
		return nil, nil, fmt.Errorf("waiting for a leader: %w", err)
	}
	return store, prop, nil
}

// applyTimer records how long Raft took to apply an entry.
type applyTimer struct{ mset *metrics.Set }

func (a applyTimer) observe(d time.Duration) { a.mset.RaftApplySeconds.Observe(d.Seconds()) }

// newIRC builds the IRC edge; it subscribes to the streams in its constructor.
func newIRC(cfg Config, log *slog.Logger, incarnation string, mset *metrics.Set, machine *fsm.Machine, prop *proposer,
	streams *stream.Streams, msgs *chat.Service, history eventHistory, fed *peering.Federation, disconnects *assist.Disconnects,
	resolver *keyresolver.Resolver, nodes func() []irc.ClusterNode) (*irc.Server, error) {
	motd, err := readMOTD(cfg.MOTDFile)
	if err != nil {
		return nil, err
	}
	password, err := readPasswordFile(cfg.IRCPasswordFile)
	if err != nil {
		return nil, err
	}
	registration, err := registrationRelay(cfg)
	if err != nil {
		return nil, err
	}
	var links linkroute.Peering // nil, not a typed nil, without peers
	if fed != nil {
		links = fed
	}
	return irc.New(irc.Config{
		ServerName: cfg.ServerName, NodeName: cfg.NodeName, Incarnation: incarnation, Version: cfg.Version,
		MOTD: motd, Opers: cfg.Opers, OperDIDs: cfg.OperDIDs, NoGuests: cfg.NoGuests, Password: password,
		FloodLimits: !cfg.NoFloodLimits, JoinHistory: cfg.JoinHistory,
		Logger: log.With("component", "irc"), Metrics: mset, Now: cfg.Clock,
		Messages: msgs, KeyLifetime: cfg.SigningKeyLifetime, Streams: streams,
		Links:     linkroute.New(links, machine),
		PingAfter: cfg.PingAfter, PingTimeout: cfg.PingTimeout, SendQBytes: cfg.SendQBytes,
		KeySweepEvery: cfg.KeySweepEvery, Disconnects: disconnects,
		Registration: registration, Metadata3: cfg.Metadata3, Rejoin: cfg.rejoin(),
		ServerInfo: cfg.ServerInfo, Nodes: nodes,
	}, machine, prop, history, &sasl.Verifier{Resolver: resolver, ChallengeTTL: cfg.ChallengeTTL}), nil
}

// registerInstance ends the sessions an earlier process of this node held (they died with it) and
// publishes this node's public key to every replica (the private key stays in keys/).
func registerInstance(ctx context.Context, cfg Config, incarnation string, prop *proposer, serverKey ed25519.PrivateKey) error {
	purgeCtx, cancelPurge := context.WithTimeout(ctx, 30*time.Second)
	_, err := prop.Propose(purgeCtx, fsm.PurgeNode{Node: cfg.NodeName, Keep: incarnation, Reason: "Server restarted"})
	cancelPurge()
	if err != nil {
		return fmt.Errorf("purging old sessions: %w", err)
	}
	pub := serverKey.Public().(ed25519.PublicKey)
	keyCtx, cancelKey := context.WithTimeout(ctx, 30*time.Second)
	defer cancelKey()
	res, err := prop.Propose(keyCtx, fsm.RegisterKey{DID: serverDID(cfg), KID: signing.KID(pub), PublicKey: pub, Source: "server-key", Purpose: "msgsig"})
	if err != nil {
		return fmt.Errorf("registering the server key: %w", err)
	}
	if res.Code != fsm.OK && res.Code != fsm.NoChange {
		return fmt.Errorf("registering the server key: %s", res.Code)
	}
	return nil
}

// registerGauges exports the node's gauges.
func registerGauges(mset *metrics.Set, machine *fsm.Machine, rf *raft.Store, started time.Time) {
	mset.GaugeFunc("palaver_channels", "Channels in the replicated state.", func() float64 { return float64(channelCount(machine)) })
	mset.GaugeFunc("palaver_uptime_seconds", "Seconds since the node started.", func() float64 { return time.Since(started).Seconds() })
	mset.GaugeFunc("palaver_raft_term", "Current Raft term.", func() float64 { return float64(rf.Status().Term) })
	mset.GaugeFunc("palaver_raft_voters", "Voters in the Raft configuration this node knows.", func() float64 { return float64(rf.Status().Voters) })
	mset.GaugeFunc("palaver_raft_applied_index", "Last applied Raft index.", func() float64 { return float64(rf.AppliedIndex()) })
}

// listenIRC opens the IRC listeners (plain and TLS; nil when not configured).
func listenIRC(cfg Config) (ircLn, tlsLn net.Listener, err error) {
	if cfg.IRCAddr != "" {
		if ircLn, err = net.Listen("tcp", cfg.IRCAddr); err != nil {
			return nil, nil, err
		}
	}
	if cfg.TLSAddr != "" {
		cert, err := transport.LoadOrCreateCertificate(filepath.Join(cfg.DataDir, "tls"), cfg.TLSCertFile, cfg.TLSKeyFile, certHosts(cfg))
		if err != nil {
			closeIf(ircLn)
			return nil, nil, fmt.Errorf("tls certificate: %w", err)
		}
		ln, err := net.Listen("tcp", cfg.TLSAddr)
		if err != nil {
			closeIf(ircLn)
			return nil, nil, fmt.Errorf("tls listener: %w", err)
		}
		tlsLn = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	}
	return ircLn, tlsLn, nil
}

func closeIf(ln net.Listener) {
	if ln != nil {
		ln.Close()
	}
}

// newREST builds the public HTTP server's engine with the REST routes.
func newREST(cfg Config, log *slog.Logger, httpLn net.Listener, ircSrv *irc.Server, ircLimiter *transport.IPLimiter,
	hl *health, machine *fsm.Machine, prop *proposer, mset *metrics.Set, events *eventstore.Store,
	resolver *keyresolver.Resolver, sign *signingapi.API, rf *raft.Store) *rest.Server {
	return rest.New(rest.Config{
		ServerName: cfg.ServerName, BaseURL: cfg.BaseURL, AllowedOrigins: cfg.AllowedOrigins,
		Tokens: ircSrv, Health: hl, Favorites: &favorites{machine: machine, prop: prop}, Passwords: ircSrv,
		Metrics: mset, IRC: ircSrv.Handle, IRCLimiter: ircLimiter, Logger: log.With("component", "http"),
		State: machine, Events: events, Resolver: resolver, Evidence: sign,
		Linearize:  readIndex{rf}.wait,
		RateLimits: rest.RateLimits{Off: cfg.NoFloodLimits},
		// Pages on localhost at any port may open WebSocket IRC only on a node that only they
		// can reach: bound to loopback, with a local base URL.
		LocalWebSocketOrigins: isLoopbackListener(httpLn) && rest.IsLocalOrigin(cfg.BaseURL),
		TrustedProxies:        cfg.TrustedProxies, HTTPLimits: cfg.HTTPLimits,
	})
}

// readIndex waits until this node's replica has applied everything committed when it was called.
type readIndex struct{ raft *raft.Store }

func (r readIndex) wait(ctx context.Context) error {
	_, err := r.raft.ReadIndex(ctx)
	return err
}

// serveHTTP serves the public HTTP server, over the per-client cap, until Close. WebSocket
// sessions live on their request's context: stopping ends them, then shuts the server down.
func serveHTTP(stop *stopList, cfg Config, log *slog.Logger, rs *rest.Server, httpLn net.Listener) {
	ctx, cancel := context.WithCancel(context.Background())
	ln := rest.SecurityHeadersListener(transport.LimitListener(httpLn, transport.NewIPLimiter(cfg.MaxHTTPConnsPerIP),
		overCap{log, cfg.MaxHTTPConnsPerIP}.closed))
	stop.add("http", startServer("http", rs.HTTPServer(ctx), ln, log, cancel))
}

// overCap logs a connection over the per-client cap of the HTTP server.
type overCap struct {
	log *slog.Logger
	cap int
}

func (o overCap) closed(addr net.Addr) {
	o.log.Debug("http connection over the per-client cap closed", "remote", addr.String(), "cap", o.cap)
}

// Close stops the node: what Start started, in the reverse order (listeners first, then the
// surfaces and clients, Raft, the streams and the event store).
func (n *Node) Close() error { return n.close() }

// stopList is what a node stops, in the order it was started.
type stopList struct{ steps []stopStep }

type stopStep struct {
	name string
	s    stopper
}

// stopper is one thing Close stops.
type stopper interface{ stop() error }

// add appends a step; its error, if any, is part of what Close returns.
func (s *stopList) add(name string, st stopper) {
	s.steps = append(s.steps, stopStep{name: name, s: st})
}

// close runs the steps backwards and returns their errors.
func (s *stopList) close() error {
	var errs []error
	for i := len(s.steps) - 1; i >= 0; i-- {
		if err := s.steps[i].s.stop(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.steps[i].name, err))
		}
	}
	s.steps = nil
	return errors.Join(errs...)
}

// closeErr stops with a Close whose error Close reports.
type closeErr func() error

func (f closeErr) stop() error { return f() }

// closeNoErr stops with a Close that cannot fail.
type closeNoErr func()

func (f closeNoErr) stop() error { f(); return nil }

// listenerStop closes a listener, which what serves it may have closed already.
type listenerStop struct{ ln net.Listener }

func (l listenerStop) stop() error { l.ln.Close(); return nil }

// task is a goroutine that runs until the node stops: stopping ends its context and waits.
type task struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func startTask(f func(context.Context)) *task {
	ctx, cancel := context.WithCancel(context.Background())
	t := &task{cancel: cancel, done: make(chan struct{})}
	go t.run(ctx, f)
	return t
}

func (t *task) run(ctx context.Context, f func(context.Context)) {
	defer close(t.done)
	f(ctx)
}

func (t *task) stop() error {
	t.cancel()
	<-t.done
	return nil
}

// server is an HTTP server serving a listener until the node stops. One with a base context
// (cancel) ends it, then shuts down gracefully; the others close at once.
type server struct {
	name   string
	srv    *http.Server
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{}
}

func startServer(name string, srv *http.Server, ln net.Listener, log *slog.Logger, cancel context.CancelFunc) *server {
	s := &server{name: name, srv: srv, log: log, cancel: cancel, done: make(chan struct{})}
	go s.serve(ln)
	return s
}

func (s *server) serve(ln net.Listener) {
	defer close(s.done)
	if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
		s.log.Error(s.name+" server", "err", err)
	}
}

func (s *server) stop() error {
	if s.cancel == nil {
		s.srv.Close()
	} else {
		s.cancel()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.srv.Shutdown(ctx)
	}
	<-s.done
	return nil
}

// ircListener serves IRC connections on one listener until its context ends.
type ircListener struct {
	ln      net.Listener
	kind    string
	limiter *transport.IPLimiter
	irc     *irc.Server
	log     *slog.Logger
}

func (l ircListener) serve(ctx context.Context) {
	if err := transport.Serve(ctx, l.ln, l.kind, l.limiter, l.irc.Handle); err != nil && ctx.Err() == nil {
		l.log.Error("listener stopped", "kind", l.kind, "err", err)
	}
}

// IRCAddr, TLSAddr and HTTPAddr are the bound listener addresses ("" when disabled).
func (n *Node) IRCAddr() string  { return n.addrs.irc }
func (n *Node) TLSAddr() string  { return n.addrs.tls }
func (n *Node) HTTPAddr() string { return n.addrs.http }

// PprofAddr is the address the runtime profiles are served on ("" without --pprof-addr).
func (n *Node) PprofAddr() string { return n.addrs.pprof }

// ServerDID is the node's did:web identity (did:web:<node name>), under which its server key is
// published and registered through Raft. On a single node the node name is the server name.
func (n *Node) ServerDID() string { return serverDID(n.cfg) }

func serverDID(cfg Config) string { return "did:web:" + cfg.NodeName }

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
func (n *Node) Health() rest.Health { return n.health.Health() }

// health is the node's health object, for the node and for GET /api/v1/health.
type health struct {
	cfg      Config
	started  time.Time
	log      *slog.Logger
	raft     *raft.Store
	irc      *irc.Server
	machine  *fsm.Machine
	exchange *exchange.Exchange
	av       *avSurface
}

func (h *health) Health() rest.Health {
	st := h.raft.Status()
	return rest.Health{
		ServerName: h.cfg.ServerName, Connections: h.irc.Connections(), Channels: channelCount(h.machine),
		UptimeSecs: int64(time.Since(h.started).Seconds()), AV: h.av.running(), AVError: h.av.gateway.Unavailable(), Version: h.cfg.Version,
		Node: h.cfg.NodeName, Role: st.Role, Term: st.Term, Replication: h.replication(),
	}
}

// replication is the health answer's view of the exchange (nil when unclustered, or when the
// store cannot be read).
func (h *health) replication() *rest.Replication {
	if h.raft.ClusterHTTPListener() == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	peers, err := h.exchange.Replication(ctx)
	if err != nil {
		h.log.Debug("health: replication", "err", err)
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
func channelCount(machine *fsm.Machine) int {
	count := 0
	machine.Read(func(st *fsm.State) {
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
// registrationRelay is the account registration with the SMTP relay's password and CAs read
// from their files.
func registrationRelay(cfg Config) (irc.Registration, error) {
	reg := cfg.AccountRegistration
	if cfg.SMTPPasswordFile != "" {
		pw, err := readSecretLine(cfg.SMTPPasswordFile, "smtp password")
		if err != nil {
			return reg, err
		}
		reg.Email.Relay.Password = pw
	}
	if cfg.SMTPCAFile != "" {
		pem, err := os.ReadFile(cfg.SMTPCAFile)
		if err != nil {
			return reg, fmt.Errorf("smtp CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return reg, fmt.Errorf("smtp CA file %s: no PEM certificate", cfg.SMTPCAFile)
		}
		reg.Email.Relay.RootCAs = pool
	}
	return reg, nil
}

func readPasswordFile(path string) (string, error) { return readSecretLine(path, "irc password") }

// readSecretLine is the first line of the file at path ("" without a path); what names it in errors.
func readSecretLine(path, what string) (string, error) {
	if path == "" {
		return "", nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	line = strings.TrimSuffix(line, "\r")
	if line == "" {
		return "", fmt.Errorf("%s: %s has an empty first line", what, path)
	}
	return line, nil
}

// proposer stamps commands with a request id, this node's name and the time, and proposes them.
// It keeps the contract of irc.Proposer: it returns once this node applied the entry and every
// Backpressure subscriber of the Applied stream handled it (rendered), so that a command's own
// effects reach its client before the command's replies. The node has exactly one (openRaft's);
// one without rendered (the leader's end of dead hosts' calls) does not wait for the render.
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

// raftProposer is the proposer as the parts given to raft.Open hold it: empty until Open returns.
type raftProposer struct{ p atomic.Pointer[proposer] }

func (r *raftProposer) Propose(ctx context.Context, cmd fsm.Command) (fsm.Result, error) {
	p := r.p.Load()
	if p == nil {
		return fsm.Result{}, errors.New("raft is not open yet")
	}
	return p.Propose(ctx, cmd)
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
