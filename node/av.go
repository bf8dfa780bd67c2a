package node

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/palaver-chat/palaver/gateway/av"
	"github.com/palaver-chat/palaver/gateway/irc"
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
}

// avDeadHostCheck is how often the leader looks for calls whose host node is gone.
const avDeadHostCheck = 2 * time.Second

// mountAV starts the forwarding unit (unless --no-av), mounts the call routes, ends the calls
// of this node's previous process, and has the leader end the calls of dead hosts.
func (n *Node) mountAV(context.Context) error {
	prop := n.prop
	opts := n.cfg.AV
	if err := opts.Validate(); err != nil {
		return fmt.Errorf("av: %w", err)
	}
	surface := &avSurface{}
	unavailable := ""
	forward := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "palaver_av_forward_seconds", Help: "Time to forward one RTP packet to every subscriber of its track.",
		Buckets: prometheus.ExponentialBuckets(2e-6, 4, 10),
	})
	n.metrics.Registry.MustRegister(forward)
	if !opts.Off {
		s, err := sfu.New(sfu.Config{
			UDPAddr: opts.UDPAddr, PublicIPs: opts.PublicIPs, AllowPrivateCandidates: opts.AllowPrivateCandidates,
			Logger: n.log.With("component", "sfu"),
			OnLeave: func(channel, callID, account, reason string) {
				if surface.gateway != nil {
					surface.gateway.OnLeave(channel, callID, account, reason)
				}
			},
			ObserveForward: func(d time.Duration) { forward.Observe(d.Seconds()) },
		})
		if err != nil {
			unavailable = fmt.Sprintf("the media forwarding unit could not start on UDP %s (%v); every node needs a UDP address of its own (--av-udp-addr)", opts.UDPAddr, err)
			n.log.Error("CALLS ARE UNAVAILABLE ON THIS NODE: the forwarding unit did not start; this node still serves the calls other nodes host",
				"udp", opts.UDPAddr, "err", err, "fix", "give every node its own --av-udp-addr")
		} else {
			surface.sfu = s
			n.log.Info("forwarding unit started", "udp", s.Addr())
		}
	}
	surface.gateway = av.New(av.Config{
		Node: n.cfg.NodeName, BaseURL: n.cfg.BaseURL, State: n.machine, Propose: prop, Keys: avKeys{n},
		SFU: surface.sfu, Unavailable: unavailable, HostURL: n.nodeBaseURL, Announce: n.announceAV,
		ServerName: n.cfg.ServerName, OperDIDs: n.cfg.OperDIDs, Tell: n.tellAV, Logger: n.log.With("component", "av"),
	})
	n.av.Store(surface)
	if err := surface.gateway.Mount(n.rest); err != nil {
		return err
	}
	// Members start, join, leave and end calls with +freeq.at/av-* TAGMSGs to the channel.
	if err := n.irc.AddMessageCheck("av", func(m irc.OutgoingMessage) *irc.Refusal {
		r := surface.gateway.CheckMessage(av.ChannelMessage{Session: m.SessionID, DID: m.DID, Nick: m.Nick,
			Command: m.Command, Channel: m.Channel, Status: m.Status, Tags: m.Tags})
		if r == nil {
			return nil
		}
		return &irc.Refusal{Code: r.Code, Text: r.Text}
	}); err != nil {
		return fmt.Errorf("av: %w", err)
	}
	// The roster changes reach the surface in log order; a dropped stretch is answered by a
	// resync against the state.
	if err := n.streams.Applied.Subscribe("av", stream.DropAndResync, func(e stream.Entry) {
		if e.Resync {
			surface.gateway.Resync()
			return
		}
		surface.gateway.Observe(e.Events)
	}); err != nil {
		return fmt.Errorf("av: %w", err)
	}
	n.registerAVMetrics()
	// Calls hosted by an earlier process of this node died with it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := prop.Propose(ctx, fsmav.AVEndNode{Node: n.cfg.NodeName, Reason: "the hosting server restarted"}); err != nil {
		return fmt.Errorf("ending the calls of the previous process: %w", err)
	}
	n.raft.OnLeadership(n.endCallsOfDeadHosts)
	return nil
}

// avRunning reports whether calls can be made on this node (health av).
func (n *Node) avRunning() bool { a := n.av.Load(); return a != nil && a.gateway.Running() }

// avError says why this node's forwarding unit is not running ("" when it runs): health av_error.
func (n *Node) avError() string {
	if a := n.av.Load(); a != nil {
		return a.gateway.Unavailable()
	}
	return ""
}

// closeAV ends the signalling sessions, then every call's connections and the UDP socket.
func (n *Node) closeAV() {
	a := n.av.Load()
	if a == nil {
		return
	}
	a.gateway.Close()
	if a.sfu != nil {
		if err := a.sfu.Close(); err != nil {
			n.log.Warn("closing the forwarding unit", "err", err)
		}
	}
}

// SFU is the node's forwarding unit (nil when calls are off), for diagnosis and tests.
func (n *Node) SFU() *sfu.SFU {
	if a := n.av.Load(); a != nil {
		return a.sfu
	}
	return nil
}

// announceAV sends a server TAGMSG to the channel's members on this node, under the msgid the
// call event derives (the same on every node).
func (n *Node) announceAV(channel string, tags map[string]string, at time.Time, msgid string) {
	n.deliverAsNode(chat.Draft{Command: "TAGMSG", Venue: channel, Tags: tags}, msgid, at)
}

// tellAV sends a server NOTICE to the sessions of did on this node.
func (n *Node) tellAV(did, text string, tags map[string]string) {
	n.deliverAsNode(chat.Draft{Command: "NOTICE", Venue: chat.DMVenue(n.ServerDID(), did), Text: text, Tags: tags}, "", time.Time{})
}

// deliverAsNode delivers a message of this node's own to its members: the message service gives
// it its msgid (unless derived) and signature.
func (n *Node) deliverAsNode(d chat.Draft, msgid string, at time.Time) {
	d.Nick, d.Mask = n.cfg.ServerName, n.cfg.ServerName
	m, err := n.chat.DeliverAsNode(d, msgid, at)
	if err != nil {
		n.log.Warn("server message not delivered", "venue", d.Venue, "err", err)
		return
	}
	n.irc.DeliverRemote(m)
}

// nodeBaseURL is the public base URL of a live node of the cluster, gossiped in its metadata.
func (n *Node) nodeBaseURL(node string) (string, bool) {
	if node == n.cfg.NodeName {
		return n.cfg.BaseURL, true
	}
	for _, m := range n.raft.Members() {
		if m.NodeID == node && m.State == raft.MemberAlive && m.Meta[metaHTTP] != "" {
			return m.Meta[metaHTTP], true
		}
	}
	return "", false
}

// endCallsOfDeadHosts runs while this node leads: a call whose host node is dead or gone from
// the cluster ends (a new call can then start on another node).
func (n *Node) endCallsOfDeadHosts(ctx context.Context) {
	prop := &proposer{store: n.raft, node: n.cfg.NodeName}
	runEvery(ctx, avDeadHostCheck, func() {
		alive := map[string]bool{n.cfg.NodeName: true}
		for _, m := range n.raft.Members() {
			if m.State == raft.MemberAlive {
				alive[m.NodeID] = true
			}
		}
		dead := map[string]bool{}
		n.machine.Read(func(st *fsm.State) {
			for _, call := range fsmav.Of(st).Live() {
				if !alive[call.Host] {
					dead[call.Host] = true
				}
			}
		})
		for host := range dead {
			if _, err := prop.Propose(ctx, fsmav.AVEndNode{Node: host, Reason: "the hosting server is gone"}); err != nil && ctx.Err() == nil {
				n.log.Warn("ending the calls of a dead node", "node", host, "err", err)
			}
		}
	})
}

// avKeys signs signalling tokens with this node's server key and checks them against the
// replicated server keys of the cluster's nodes.
type avKeys struct{ n *Node }

func (k avKeys) Issuer() (string, string) {
	return k.n.ServerDID(), signing.KID(k.n.serverKey.Public().(ed25519.PublicKey))
}

func (k avKeys) Sign(msg []byte) []byte { return ed25519.Sign(k.n.serverKey, msg) }

func (k avKeys) Verify(issuer, kid string, msg, sig []byte) bool {
	pub, ok := k.n.serverKeyOf(issuer, kid)
	return ok && ed25519.Verify(pub, msg, sig)
}

// registerAVMetrics adds the call gauges and counters.
func (n *Node) registerAVMetrics() {
	stats := func(f func(sfu.Stats) float64) func() float64 {
		return func() float64 {
			if s := n.SFU(); s != nil {
				return f(s.Stats())
			}
			return 0
		}
	}
	counter := func(name, help string, f func() float64) {
		n.metrics.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f))
	}
	n.metrics.GaugeFunc("palaver_av_calls", "Calls whose media this node forwards.", stats(func(s sfu.Stats) float64 { return float64(s.Calls) }))
	n.metrics.GaugeFunc("palaver_av_participants", "Participants connected to this node's forwarding unit.", stats(func(s sfu.Stats) float64 { return float64(s.Participants) }))
	n.metrics.GaugeFunc("palaver_av_tracks", "Tracks published to this node's forwarding unit.", stats(func(s sfu.Stats) float64 { return float64(s.Tracks) }))
	counter("palaver_av_packets_received_total", "RTP packets received from publishers.", stats(func(s sfu.Stats) float64 { return float64(s.PacketsIn) }))
	counter("palaver_av_packets_forwarded_total", "RTP packets forwarded to subscribers (one per subscriber).", stats(func(s sfu.Stats) float64 { return float64(s.PacketsOut) }))
	counter("palaver_av_bytes_forwarded_total", "RTP bytes forwarded to subscribers.", stats(func(s sfu.Stats) float64 { return float64(s.BytesOut) }))
	counter("palaver_av_keyframe_requests_total", "Keyframe requests (PLI) sent to publishers.", stats(func(s sfu.Stats) float64 { return float64(s.KeyframeRequests) }))
}
