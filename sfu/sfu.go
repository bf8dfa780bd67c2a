package sfu

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	"github.com/pion/webrtc/v4"
)

// Errors of Join.
var (
	ErrClosed   = errors.New("sfu: closed")
	ErrCallFull = errors.New("sfu: the call is full")
)

// Config configures the forwarding unit.
type Config struct {
	// UDPAddr is where the ICE mux listens ("" → ":0"); a loopback host gathers loopback
	// candidates only.
	UDPAddr string
	// PublicIPs replace the address of host candidates (1:1 NAT).
	PublicIPs []string
	// AllowPrivateCandidates lets clients name loopback, private and link-local addresses as
	// their candidates (a LAN deployment, tests on loopback); otherwise those are dropped
	// (candidates.go).
	AllowPrivateCandidates bool
	// MaxParticipants bounds one call (0: DefaultMaxParticipants).
	MaxParticipants int
	// NegotiationDelay debounces renegotiation (0: 20 ms; negative: none).
	NegotiationDelay time.Duration
	// KeyframeInterval is the least time between two keyframe requests sent to one publisher for
	// one track (0: 500 ms). A request within it is sent when it ends.
	KeyframeInterval time.Duration
	// OnLeave is called (on its own goroutine) when a participant left the wire by itself: it
	// sent "leave", its connection failed or its signalling ended. Not called for Kick or End.
	OnLeave func(channel, callID, account, reason string)
	// ObserveForward receives, per forwarded packet, the time its fan-out to every subscriber
	// took (metrics).
	ObserveForward func(time.Duration)
	Logger         *slog.Logger
}

// DefaultMaxParticipants bounds a call unless Config says otherwise.
const DefaultMaxParticipants = 100

// SFU is the forwarding unit. Its methods are safe for concurrent use.
type SFU struct {
	cfg  Config
	log  *slog.Logger
	api  *webrtc.API
	conn net.PacketConn
	mux  ice.UDPMux

	// allowAddr replaces remoteAddrAllowed in tests, which run on loopback only.
	allowAddr func(addr string) bool

	mu     sync.Mutex
	calls  map[string]*call // by channel
	closed bool
	nextID atomic.Uint64

	stats counters
}

// counters are the unit's running totals.
type counters struct {
	packetsIn, bytesIn, packetsOut, bytesOut atomic.Uint64
	keyframeRequests                         atomic.Uint64
}

// New starts the forwarding unit: it binds the UDP socket and builds the shared API.
func New(cfg Config) (*SFU, error) {
	if cfg.UDPAddr == "" {
		cfg.UDPAddr = ":0"
	}
	if cfg.MaxParticipants <= 0 {
		cfg.MaxParticipants = DefaultMaxParticipants
	}
	if cfg.NegotiationDelay == 0 {
		cfg.NegotiationDelay = 20 * time.Millisecond
	}
	if cfg.KeyframeInterval <= 0 {
		cfg.KeyframeInterval = 500 * time.Millisecond
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	udpAddr, err := net.ResolveUDPAddr("udp4", cfg.UDPAddr)
	if err != nil {
		return nil, fmt.Errorf("sfu: udp address %q: %w", cfg.UDPAddr, err)
	}
	conn, err := net.ListenUDP("udp4", udpAddr)
	if err != nil {
		return nil, fmt.Errorf("sfu: udp listener: %w", err)
	}
	s := &SFU{cfg: cfg, log: logger, conn: conn, calls: map[string]*call{}}
	if s.api, s.mux, err = newAPI(cfg, conn, udpAddr.IP != nil && udpAddr.IP.IsLoopback()); err != nil {
		conn.Close()
		return nil, err
	}
	return s, nil
}

// newAPI builds the one API every peer connection shares.
func newAPI(cfg Config, conn net.PacketConn, loopback bool) (*webrtc.API, ice.UDPMux, error) {
	media := &webrtc.MediaEngine{}
	if err := media.RegisterDefaultCodecs(); err != nil {
		return nil, nil, fmt.Errorf("sfu: codecs: %w", err)
	}
	registry := &interceptor.Registry{}
	if err := webrtc.RegisterDefaultInterceptors(media, registry); err != nil {
		return nil, nil, fmt.Errorf("sfu: interceptors: %w", err)
	}
	se := webrtc.SettingEngine{}
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	mux := webrtc.NewICEUDPMux(nil, conn)
	se.SetICEUDPMux(mux)
	if loopback {
		se.SetIncludeLoopbackCandidate(true)
		se.SetIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
	}
	if len(cfg.PublicIPs) > 0 {
		if err := se.SetICEAddressRewriteRules(webrtc.ICEAddressRewriteRule{
			External: cfg.PublicIPs, AsCandidateType: webrtc.ICECandidateTypeHost,
		}); err != nil {
			return nil, nil, fmt.Errorf("sfu: public address: %w", err)
		}
	}
	api := webrtc.NewAPI(webrtc.WithMediaEngine(media), webrtc.WithInterceptorRegistry(registry), webrtc.WithSettingEngine(se))
	return api, mux, nil
}

// Addr is the UDP address call media arrives on.
func (s *SFU) Addr() string { return s.conn.LocalAddr().String() }

// Close ends every call, closes every peer connection, then the UDP socket.
func (s *SFU) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	calls := make([]*call, 0, len(s.calls))
	for _, c := range s.calls {
		calls = append(calls, c)
	}
	s.calls = map[string]*call{}
	s.mu.Unlock()
	for _, c := range calls {
		c.end("server shutting down")
	}
	err := s.mux.Close()
	if cerr := s.conn.Close(); cerr != nil && err == nil && !errors.Is(cerr, net.ErrClosed) {
		err = cerr
	}
	return err
}

// Join adds a participant (an authorized account) to the channel's call, creating the call on
// first use, and sends it the first offer through out before returning. out must be ready to be
// called before Join returns and must not block (a gateway queues); an error from it ends the
// participant. A call of the channel with another id is ended first: the roster moved on.
func (s *SFU) Join(channel, callID, account string, out func(Signal) error) (*Participant, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	c := s.calls[channel]
	var stale *call
	if c != nil && c.id != callID {
		stale, c = c, nil
	}
	if c == nil {
		c = newCall(s, channel, callID)
		s.calls[channel] = c
	}
	s.mu.Unlock()
	if stale != nil {
		stale.end("a new call started")
	}
	p, err := c.join(fmt.Sprintf("p%d", s.nextID.Add(1)), account, out)
	if err != nil {
		s.dropIfEmpty(c)
		return nil, err
	}
	return p, nil
}

// Kick removes every participant of account from the channel's call at once: its peer
// connection is closed and its tracks leave the others. It reports how many were removed.
func (s *SFU) Kick(channel, account, reason string) int {
	c := s.call(channel)
	if c == nil {
		return 0
	}
	n := 0
	for _, p := range c.byAccount(account) {
		p.close(reason, false)
		n++
	}
	return n
}

// End ends the channel's call (callID "" matches any): every participant is disconnected.
func (s *SFU) End(channel, callID, reason string) bool {
	s.mu.Lock()
	c := s.calls[channel]
	if c == nil || (callID != "" && c.id != callID) {
		s.mu.Unlock()
		return false
	}
	delete(s.calls, channel)
	s.mu.Unlock()
	c.end(reason)
	return true
}

func (s *SFU) call(channel string) *call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[channel]
}

// dropIfEmpty forgets a call without participants.
func (s *SFU) dropIfEmpty(c *call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls[c.channel] == c && c.empty() {
		delete(s.calls, c.channel)
	}
}

// Stats are the unit's totals, for metrics.
type Stats struct {
	Calls, Participants, Tracks int
	PacketsIn, BytesIn          uint64 // received from publishers
	PacketsOut, BytesOut        uint64 // forwarded to subscribers (one per subscriber)
	KeyframeRequests            uint64
}

// Stats returns the current totals.
func (s *SFU) Stats() Stats {
	st := Stats{
		PacketsIn: s.stats.packetsIn.Load(), BytesIn: s.stats.bytesIn.Load(),
		PacketsOut: s.stats.packetsOut.Load(), BytesOut: s.stats.bytesOut.Load(),
		KeyframeRequests: s.stats.keyframeRequests.Load(),
	}
	s.mu.Lock()
	calls := make([]*call, 0, len(s.calls))
	for _, c := range s.calls {
		calls = append(calls, c)
	}
	s.mu.Unlock()
	st.Calls = len(calls)
	for _, c := range calls {
		p, t := c.size()
		st.Participants += p
		st.Tracks += t
	}
	return st
}

// Channels lists the channels with a call on this unit, sorted.
func (s *SFU) Channels() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.calls))
	for ch := range s.calls {
		out = append(out, ch)
	}
	sort.Strings(out)
	return out
}

// HasAccount reports whether account has a participant in the channel's call.
func (s *SFU) HasAccount(channel, account string) bool {
	c := s.call(channel)
	return c != nil && len(c.byAccount(account)) > 0
}
