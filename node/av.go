package node

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/palaver-chat/palaver/gateway/av"
	"github.com/palaver-chat/palaver/gateway/irc"
	"github.com/palaver-chat/palaver/gateway/metrics"
	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/node/stream"
	"github.com/palaver-chat/palaver/raft"
	"github.com/palaver-chat/palaver/raft/fsm"
	fsmav "github.com/palaver-chat/palaver/raft/fsm/av"
	"github.com/palaver-chat/palaver/sfu"
)

// avSurface is the node's call surface: the forwarding unit (nil when off or failed) and the
// gateway of its routes.
type avSurface struct {
	sfu     *sfu.SFU
	gateway *av.Gateway
	forward prometheus.Histogram // time to forward one packet
	log     *slog.Logger
	once    sync.Once
}

// avDeadHostCheck is how often the leader looks for calls whose host node is gone.
const avDeadHostCheck = 2 * time.Second

// newAV starts the forwarding unit (unless --no-av; when it cannot start, the gateway says why)
// and builds the gateway of the call routes. mountAV plugs it into the node.
func newAV(cfg Config, log *slog.Logger, machine *fsm.Machine, prop *proposer, keys avKeys, rf *raft.Store,
	voice serverVoice, mset *metrics.Set) (*avSurface, error) {
	opts := cfg.AV
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	surface := &avSurface{log: log, forward: prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "palaver_av_forward_seconds", Help: "Time to forward one RTP packet to every subscriber of its track.",
		Buckets: prometheus.ExponentialBuckets(2e-6, 4, 10),
	})}
	mset.Registry.MustRegister(surface.forward)
	unavailable := ""
	if !opts.Off {
		s, err := sfu.New(sfu.Config{
			UDPAddr: opts.UDPAddr, PublicIPs: opts.PublicIPs, AllowPrivateCandidates: opts.AllowPrivateCandidates,
			Logger: log.With("component", "sfu"),
			// The unit and the gateway know each other: the gateway is built on the unit, and
			// the unit tells it of departures (onLeave), which come only once calls run.
			OnLeave:        surface.onLeave,
			ObserveForward: surface.observeForward,
		})
		if err != nil {
			unavailable = fmt.Sprintf("the media forwarding unit could not start on UDP %s (%v); every node needs a UDP address of its own (--av-udp-addr)", opts.UDPAddr, err)
			log.Error("CALLS ARE UNAVAILABLE ON THIS NODE: the forwarding unit did not start; this node still serves the calls other nodes host",
				"udp", opts.UDPAddr, "err", err, "fix", "give every node its own --av-udp-addr")
		} else {
			surface.sfu = s
			log.Info("forwarding unit started", "udp", s.Addr())
		}
	}
	surface.gateway = av.New(av.Config{
		Node: cfg.NodeName, BaseURL: cfg.BaseURL, State: machine, Propose: prop, Keys: keys,
		SFU: surface.sfu, Unavailable: unavailable, HostURL: nodeURLs{cfg, rf}.baseURL, Announce: voice.announce,
		ServerName: cfg.ServerName, OperDIDs: cfg.OperDIDs, Tell: voice.tell, Logger: log.With("component", "av"),
	})
	return surface, nil
}

// mountAV mounts the call routes, checks and observes the call TAGMSGs, ends the calls of this
// node's previous process, and has the leader end the calls of dead hosts.
func mountAV(cfg Config, log *slog.Logger, surface *avSurface, machine *fsm.Machine, prop *proposer, rf *raft.Store,
	rs *rest.Server, ircSrv *irc.Server, streams *stream.Streams, mset *metrics.Set) error {
	if err := surface.gateway.Mount(rs); err != nil {
		return err
	}
	// Members start, join, leave and end calls with +freeq.at/av-* TAGMSGs to the channel.
	if err := ircSrv.AddMessageCheck("av", surface.checkMessage); err != nil {
		return err
	}
	// The roster changes reach the surface in log order; a dropped stretch is answered by a
	// resync against the state.
	if err := streams.Applied.Subscribe("av", stream.DropAndResync, surface.observe); err != nil {
		return err
	}
	registerAVMetrics(mset, surface)
	// Calls hosted by an earlier process of this node died with it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := prop.Propose(ctx, fsmav.AVEndNode{Node: cfg.NodeName, Reason: "the hosting server restarted"}); err != nil {
		return fmt.Errorf("ending the calls of the previous process: %w", err)
	}
	rf.OnLeadership(deadHosts{cfg.NodeName, rf, machine, log}.run)
	return nil
}

// checkMessage is the IRC edge's check of a call TAGMSG.
func (a *avSurface) checkMessage(m irc.OutgoingMessage) *irc.Refusal {
	r := a.gateway.CheckMessage(av.ChannelMessage{Session: m.SessionID, DID: m.DID, Nick: m.Nick,
		Command: m.Command, Channel: m.Channel, Status: m.Status, Tags: m.Tags})
	if r == nil {
		return nil
	}
	return &irc.Refusal{Code: r.Code, Text: r.Text}
}

// observe hands the gateway the applied entries' events, or a resync.
func (a *avSurface) observe(e stream.Entry) {
	if e.Resync {
		a.gateway.Resync()
		return
	}
	a.gateway.Observe(e.Events)
}

// running reports whether calls can be made on this node (health av).
func (a *avSurface) running() bool { return a.gateway.Running() }

// onLeave is the forwarding unit's OnLeave: it goes to the gateway, built after the unit.
func (a *avSurface) onLeave(channel, callID, account, reason string) {
	if a.gateway != nil {
		a.gateway.OnLeave(channel, callID, account, reason)
	}
}

func (a *avSurface) observeForward(d time.Duration) { a.forward.Observe(d.Seconds()) }

// stop ends the signalling sessions, then every call's connections and the UDP socket. Start
// adds it twice: where the surface is built, for a start that fails, and as the first step of
// Close (see Start); it runs once.
func (a *avSurface) stop() error {
	a.once.Do(a.closeNow)
	return nil
}

func (a *avSurface) closeNow() {
	a.gateway.Close()
	if a.sfu != nil {
		if err := a.sfu.Close(); err != nil {
			a.log.Warn("closing the forwarding unit", "err", err)
		}
	}
}

// SFU is the node's forwarding unit (nil when calls are off), for diagnosis and tests.
func (n *Node) SFU() *sfu.SFU { return n.av.sfu }

// serverVoice sends this node's own messages to its members: the message service gives each its
// msgid (unless derived) and signature, the IRC edge delivers it.
type serverVoice struct {
	cfg  Config
	log  *slog.Logger
	chat *chat.Service
	irc  *irc.Server
}

// announce sends a server TAGMSG to the channel's members on this node, under the msgid the
// call event derives (the same on every node).
func (v serverVoice) announce(channel string, tags map[string]string, at time.Time, msgid string) {
	v.deliver(chat.Draft{Command: "TAGMSG", Venue: channel, Tags: tags}, msgid, at)
}

// tell sends a server NOTICE to the sessions of did on this node.
func (v serverVoice) tell(did, text string, tags map[string]string) {
	v.deliver(chat.Draft{Command: "NOTICE", Venue: chat.DMVenue(serverDID(v.cfg), did), Text: text, Tags: tags}, "", time.Time{})
}

func (v serverVoice) deliver(d chat.Draft, msgid string, at time.Time) {
	d.Nick, d.Mask = v.cfg.ServerName, v.cfg.ServerName
	m, err := v.chat.DeliverAsNode(d, msgid, at)
	if err != nil {
		v.log.Warn("server message not delivered", "venue", d.Venue, "err", err)
		return
	}
	v.irc.DeliverRemote(m)
}

// nodeURLs finds the public base URL of a live node of the cluster, gossiped in its metadata.
type nodeURLs struct {
	cfg  Config
	raft *raft.Store
}

func (u nodeURLs) baseURL(node string) (string, bool) {
	if node == u.cfg.NodeName {
		return u.cfg.BaseURL, true
	}
	for _, m := range u.raft.Members() {
		if m.NodeID == node && m.State == raft.MemberAlive && m.Meta[metaHTTP] != "" {
			return m.Meta[metaHTTP], true
		}
	}
	return "", false
}

// deadHosts runs while this node leads: a call whose host node is dead or gone from the cluster
// ends (a new call can then start on another node).
type deadHosts struct {
	self    string
	raft    *raft.Store
	machine *fsm.Machine
	log     *slog.Logger
}

func (d deadHosts) run(ctx context.Context) {
	prop := &proposer{store: d.raft, node: d.self}
	runEvery(ctx, avDeadHostCheck, func() {
		alive := map[string]bool{d.self: true}
		for _, m := range d.raft.Members() {
			if m.State == raft.MemberAlive {
				alive[m.NodeID] = true
			}
		}
		dead := map[string]bool{}
		d.machine.Read(func(st *fsm.State) {
			for _, call := range fsmav.Of(st).Live() {
				if !alive[call.Host] {
					dead[call.Host] = true
				}
			}
		})
		for host := range dead {
			if _, err := prop.Propose(ctx, fsmav.AVEndNode{Node: host, Reason: "the hosting server is gone"}); err != nil && ctx.Err() == nil {
				d.log.Warn("ending the calls of a dead node", "node", host, "err", err)
			}
		}
	})
}

// avKeys signs signalling tokens with this node's server key and checks them against the
// replicated server keys of the cluster's nodes.
type avKeys struct {
	key     ed25519.PrivateKey
	did     string
	servers serverKeys
}

func (k avKeys) Issuer() (string, string) {
	return k.did, signing.KID(k.key.Public().(ed25519.PublicKey))
}

func (k avKeys) Sign(msg []byte) []byte { return ed25519.Sign(k.key, msg) }

func (k avKeys) Verify(issuer, kid string, msg, sig []byte) bool {
	pub, ok := k.servers.of(issuer, kid)
	return ok && ed25519.Verify(pub, msg, sig)
}

// registerAVMetrics adds the call gauges and counters.
func registerAVMetrics(mset *metrics.Set, surface *avSurface) {
	stats := func(f func(sfu.Stats) float64) func() float64 {
		return func() float64 {
			if s := surface.sfu; s != nil {
				return f(s.Stats())
			}
			return 0
		}
	}
	counter := func(name, help string, f func() float64) {
		mset.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f))
	}
	mset.GaugeFunc("palaver_av_calls", "Calls whose media this node forwards.", stats(func(s sfu.Stats) float64 { return float64(s.Calls) }))
	mset.GaugeFunc("palaver_av_participants", "Participants connected to this node's forwarding unit.", stats(func(s sfu.Stats) float64 { return float64(s.Participants) }))
	mset.GaugeFunc("palaver_av_tracks", "Tracks published to this node's forwarding unit.", stats(func(s sfu.Stats) float64 { return float64(s.Tracks) }))
	counter("palaver_av_packets_received_total", "RTP packets received from publishers.", stats(func(s sfu.Stats) float64 { return float64(s.PacketsIn) }))
	counter("palaver_av_packets_forwarded_total", "RTP packets forwarded to subscribers (one per subscriber).", stats(func(s sfu.Stats) float64 { return float64(s.PacketsOut) }))
	counter("palaver_av_bytes_forwarded_total", "RTP bytes forwarded to subscribers.", stats(func(s sfu.Stats) float64 { return float64(s.BytesOut) }))
	counter("palaver_av_keyframe_requests_total", "Keyframe requests (PLI) sent to publishers.", stats(func(s sfu.Stats) float64 { return float64(s.KeyframeRequests) }))
}
