package sfu_test

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	"github.com/pion/rtcp"
	"github.com/pion/rtp/codecs"
	"github.com/pion/webrtc/v4"
	"github.com/pion/webrtc/v4/pkg/media"
	"go.uber.org/goleak"

	"github.com/palaver-chat/palaver/sfu"
)

// clientAPI is the API of the test peers: loopback candidates only, no mDNS.
func clientAPI(t testing.TB) *webrtc.API {
	t.Helper()
	m := &webrtc.MediaEngine{}
	if err := m.RegisterDefaultCodecs(); err != nil {
		t.Fatal(err)
	}
	reg := &interceptor.Registry{}
	if err := webrtc.RegisterDefaultInterceptors(m, reg); err != nil {
		t.Fatal(err)
	}
	se := webrtc.SettingEngine{}
	se.SetIncludeLoopbackCandidate(true)
	se.SetIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	return webrtc.NewAPI(webrtc.WithMediaEngine(m), webrtc.WithInterceptorRegistry(reg), webrtc.WithSettingEngine(se))
}

func newSFU(t testing.TB) *sfu.SFU {
	t.Helper()
	s, err := sfu.New(sfu.Config{UDPAddr: "127.0.0.1:0", KeyframeInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// peer is a pion client in a call: it answers the SFU's offers, optionally publishes synthetic
// VP8 and Opus samples, and counts what it receives per publisher.
type peer struct {
	t       testing.TB
	name    string
	pc      *webrtc.PeerConnection
	part    *sfu.Participant
	signals chan sfu.Signal
	publish bool

	video, audio *webrtc.TrackLocalStaticSample
	wantKey      atomic.Bool
	plis         atomic.Int32

	mu        sync.Mutex
	packets   map[string]map[string]int // stream (publisher participant) → kind → packets
	keyframes map[string]time.Time      // stream → first keyframe seen
	ended     map[string]int            // stream → tracks whose reading ended

	stop chan struct{}
	wg   sync.WaitGroup
}

func join(t testing.TB, s *sfu.SFU, api *webrtc.API, channel, callID, name string, publish bool) *peer {
	t.Helper()
	pc, err := api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	p := &peer{t: t, name: name, pc: pc, signals: make(chan sfu.Signal, 256), publish: publish,
		packets: map[string]map[string]int{}, keyframes: map[string]time.Time{}, ended: map[string]int{}, stop: make(chan struct{})}
	pc.OnTrack(p.onTrack)
	var partMu sync.Mutex
	var early []webrtc.ICECandidateInit
	pc.OnICECandidate(func(c *webrtc.ICECandidate) {
		if c == nil {
			return
		}
		init := c.ToJSON()
		partMu.Lock()
		defer partMu.Unlock()
		if p.part == nil {
			early = append(early, init)
			return
		}
		_ = p.part.Handle(sfu.Signal{Type: sfu.SignalCandidate, Candidate: &init})
	})
	part, err := s.Join(channel, callID, name, func(sig sfu.Signal) error {
		select {
		case p.signals <- sig:
			return nil
		default:
			return errors.New("signal queue full")
		}
	})
	if err != nil {
		pc.Close()
		t.Fatalf("%s: join: %v", name, err)
	}
	partMu.Lock()
	p.part = part
	for i := range early {
		_ = part.Handle(sfu.Signal{Type: sfu.SignalCandidate, Candidate: &early[i]})
	}
	partMu.Unlock()
	p.wg.Add(1)
	go p.signalLoop()
	return p
}

func (p *peer) signalLoop() {
	defer p.wg.Done()
	for {
		var sig sfu.Signal
		select {
		case <-p.stop:
			return
		case sig = <-p.signals:
		}
		switch sig.Type {
		case sfu.SignalOffer:
			if err := p.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: sig.SDP}); err != nil {
				p.t.Errorf("%s: offer: %v", p.name, err)
				return
			}
			if p.publish && p.video == nil {
				p.startPublishing()
			}
			answer, err := p.pc.CreateAnswer(nil)
			if err == nil {
				err = p.pc.SetLocalDescription(answer)
			}
			if err != nil {
				p.t.Errorf("%s: answer: %v", p.name, err)
				return
			}
			if err := p.part.Handle(sfu.Signal{Type: sfu.SignalAnswer, SDP: answer.SDP}); err != nil && !errors.Is(err, sfu.ErrClosed) {
				p.t.Errorf("%s: handing the answer: %v", p.name, err)
			}
		case sfu.SignalCandidate:
			if err := p.pc.AddICECandidate(*sig.Candidate); err != nil {
				p.t.Errorf("%s: candidate: %v", p.name, err)
			}
		}
	}
}

// startPublishing adds a VP8 and an Opus track and writes a sample of each every 20 ms; a video
// frame is a keyframe only after a PLI, so a keyframe at a subscriber proves the request path.
func (p *peer) startPublishing() {
	var err error
	p.video, err = webrtc.NewTrackLocalStaticSample(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8}, "video", p.name)
	if err != nil {
		p.t.Fatal(err)
	}
	p.audio, err = webrtc.NewTrackLocalStaticSample(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus}, "audio", p.name)
	if err != nil {
		p.t.Fatal(err)
	}
	vs, err := p.pc.AddTrack(p.video)
	if err != nil {
		p.t.Fatal(err)
	}
	as, err := p.pc.AddTrack(p.audio)
	if err != nil {
		p.t.Fatal(err)
	}
	p.wg.Add(3)
	go func() {
		defer p.wg.Done()
		for {
			pkts, _, err := vs.ReadRTCP()
			if err != nil {
				return
			}
			for _, pkt := range pkts {
				if _, ok := pkt.(*rtcp.PictureLossIndication); ok {
					p.plis.Add(1)
					p.wantKey.Store(true)
				}
			}
		}
	}()
	go func() {
		defer p.wg.Done()
		for {
			if _, _, err := as.ReadRTCP(); err != nil {
				return
			}
		}
	}()
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		frame := make([]byte, 1200)
		for {
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
			frame[0] = 0x11 // VP8 frame tag, P=1: an interframe
			if p.wantKey.Swap(false) {
				frame[0] = 0x10
			}
			_ = p.video.WriteSample(media.Sample{Data: frame, Duration: 20 * time.Millisecond})
			_ = p.audio.WriteSample(media.Sample{Data: frame[:80], Duration: 20 * time.Millisecond})
		}
	}()
}

func (p *peer) onTrack(tr *webrtc.TrackRemote, _ *webrtc.RTPReceiver) {
	stream, kind := tr.StreamID(), tr.Kind().String()
	defer func() {
		p.mu.Lock()
		p.ended[stream]++
		p.mu.Unlock()
	}()
	for {
		pkt, _, err := tr.ReadRTP()
		if err != nil {
			return
		}
		key := false
		if kind == "video" {
			var vp8 codecs.VP8Packet
			if payload, err := vp8.Unmarshal(pkt.Payload); err == nil && vp8.S == 1 && vp8.PID == 0 && len(payload) > 0 && payload[0]&1 == 0 {
				key = true
			}
		}
		p.mu.Lock()
		if p.packets[stream] == nil {
			p.packets[stream] = map[string]int{}
		}
		p.packets[stream][kind]++
		if key && p.keyframes[stream].IsZero() {
			p.keyframes[stream] = time.Now()
		}
		p.mu.Unlock()
	}
}

func (p *peer) count(stream, kind string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.packets[stream][kind]
}

func (p *peer) keyframeAt(stream string) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.keyframes[stream]
}

func (p *peer) endedTracks(stream string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ended[stream]
}

func (p *peer) close() {
	close(p.stop)
	p.pc.Close()
	p.wg.Wait()
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCallForwardsEveryoneToEveryone(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := newSFU(t)
	api := clientAPI(t)
	var peers []*peer
	for _, name := range []string{"alice", "bob", "carol"} {
		peers = append(peers, join(t, s, api, "#call", "C1", name, true))
	}
	closeAll := func() {
		for _, p := range peers {
			p.close()
		}
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}
	defer func() {
		if peers != nil {
			closeAll()
		}
	}()
	ids := map[string]string{}
	for _, p := range peers {
		ids[p.name] = p.part.ID()
	}
	for _, rx := range peers {
		for _, tx := range peers {
			if rx == tx {
				continue
			}
			for _, kind := range []string{"audio", "video"} {
				eventually(t, 15*time.Second, rx.name+" receives "+tx.name+"'s "+kind, func() bool {
					return rx.count(ids[tx.name], kind) >= 50
				})
			}
		}
		if n := rx.count(ids[rx.name], "video") + rx.count(ids[rx.name], "audio"); n != 0 {
			t.Errorf("%s received %d packets of its own", rx.name, n)
		}
	}

	// A late joiner gets every track and a keyframe quickly.
	joined := time.Now()
	dave := join(t, s, api, "#call", "C1", "dave", false)
	peers = append(peers, dave)
	for _, tx := range peers[:3] {
		eventually(t, 10*time.Second, "dave receives a keyframe of "+tx.name, func() bool { return !dave.keyframeAt(ids[tx.name]).IsZero() })
		t.Logf("keyframe of %s at the late joiner after %s", tx.name, dave.keyframeAt(ids[tx.name]).Sub(joined))
		eventually(t, 10*time.Second, "dave receives "+tx.name+"'s audio", func() bool { return dave.count(ids[tx.name], "audio") > 10 })
	}

	rep, ok := s.Inspect("#call")
	if !ok || rep.CallID != "C1" || len(rep.Participants) != 4 {
		t.Fatalf("inspect: %+v %v", rep, ok)
	}
	for _, pr := range rep.Participants {
		if pr.PC != "connected" || pr.ICE != "connected" && pr.ICE != "completed" || pr.DTLS != "connected" {
			t.Errorf("%s: states pc=%s ice=%s dtls=%s", pr.Account, pr.PC, pr.ICE, pr.DTLS)
		}
		want := 2
		if pr.Account == "dave" {
			want = 0
		}
		if len(pr.Tracks) != want {
			t.Errorf("%s publishes %d tracks, want %d", pr.Account, len(pr.Tracks), want)
		}
		for _, tr := range pr.Tracks {
			if tr.PacketsReceived == 0 || tr.PacketsForwarded < tr.PacketsReceived || tr.Subscribers != 3 {
				t.Errorf("%s %s: %+v", pr.Account, tr.Kind, tr)
			}
			if tr.Kind == "video" && (tr.KeyframeRequests == 0 || tr.LastKeyframeRequest.IsZero()) {
				t.Errorf("%s video: no keyframe request recorded: %+v", pr.Account, tr)
			}
		}
	}
	st := s.Stats()
	if st.Calls != 1 || st.Participants != 4 || st.Tracks != 6 || st.PacketsOut == 0 {
		t.Errorf("stats: %+v", st)
	}

	// Kicking bob: his connection closes, his tracks end at the others, the rest go on.
	bob := peers[1]
	if n := s.Kick("#call", "bob", "kicked"); n != 1 {
		t.Fatalf("kick removed %d", n)
	}
	select {
	case <-bob.part.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("bob's participant did not end")
	}
	if r := bob.part.Reason(); r != "kicked" {
		t.Errorf("reason %q", r)
	}
	for _, rx := range []*peer{peers[0], peers[2], dave} {
		eventually(t, 10*time.Second, rx.name+"'s copies of bob's tracks end", func() bool { return rx.endedTracks(ids["bob"]) == 2 })
	}
	eventually(t, 10*time.Second, "bob's peer connection sees the close", func() bool {
		st := bob.pc.ConnectionState()
		return st == webrtc.PeerConnectionStateClosed || st == webrtc.PeerConnectionStateFailed || st == webrtc.PeerConnectionStateDisconnected
	})
	base := peers[0].count(ids["carol"], "video")
	eventually(t, 10*time.Second, "alice still receives carol", func() bool { return peers[0].count(ids["carol"], "video") > base+20 })
	if err := bob.part.Handle(sfu.Signal{Type: sfu.SignalAnswer, SDP: "v=0"}); !errors.Is(err, sfu.ErrClosed) {
		t.Errorf("a signal after the kick: %v", err)
	}
	rep, _ = s.Inspect("#call")
	for _, pr := range rep.Participants {
		if pr.Account == "bob" {
			t.Errorf("bob still in the call: %+v", pr)
		}
	}
	closeAll()
	peers = nil
}

func TestSignalsRefused(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := newSFU(t)
	defer s.Close()
	out := make(chan sfu.Signal, 64)
	p, err := s.Join("#x", "C", "acct", func(sig sfu.Signal) error { out <- sig; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if sig := <-out; sig.Type != sfu.SignalOffer || sig.SDP == "" {
		t.Fatalf("first signal %+v", sig)
	}
	cand := webrtc.ICECandidateInit{Candidate: "candidate:1 1 udp 1 127.0.0.1 9 typ host"}
	for _, tc := range []struct {
		name string
		sig  sfu.Signal
	}{
		{"unknown type", sfu.Signal{Type: "offer", SDP: "v=0"}},
		{"empty answer", sfu.Signal{Type: sfu.SignalAnswer}},
		{"garbage answer", sfu.Signal{Type: sfu.SignalAnswer, SDP: "not sdp"}},
		{"candidate without body", sfu.Signal{Type: sfu.SignalCandidate}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := p.Handle(tc.sig); !errors.Is(err, sfu.ErrBadSignal) {
				t.Fatalf("got %v, want ErrBadSignal", err)
			}
		})
	}
	for i := 0; i < 64; i++ {
		if err := p.Handle(sfu.Signal{Type: sfu.SignalCandidate, Candidate: &cand}); err != nil {
			t.Fatalf("candidate %d: %v", i, err)
		}
	}
	if err := p.Handle(sfu.Signal{Type: sfu.SignalCandidate, Candidate: &cand}); !errors.Is(err, sfu.ErrBadSignal) {
		t.Fatalf("65th early candidate: %v", err)
	}
	if !s.End("#x", "C", "ended") {
		t.Fatal("end")
	}
	<-p.Done()
	if _, ok := s.Inspect("#x"); ok {
		t.Fatal("call still there")
	}
}

func TestCallFull(t *testing.T) {
	defer goleak.VerifyNone(t)
	s, err := sfu.New(sfu.Config{UDPAddr: "127.0.0.1:0", MaxParticipants: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sink := func(sfu.Signal) error { return nil }
	if _, err := s.Join("#x", "C", "a", sink); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Join("#x", "C", "b", sink); !errors.Is(err, sfu.ErrCallFull) {
		t.Fatalf("second join: %v", err)
	}
	// A join under a new call id ends the old call.
	if _, err := s.Join("#x", "D", "b", sink); err != nil {
		t.Fatal(err)
	}
	if rep, _ := s.Inspect("#x"); rep.CallID != "D" || len(rep.Participants) != 1 {
		t.Fatalf("%+v", rep)
	}
}
