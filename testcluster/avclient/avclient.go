package avclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	"github.com/pion/rtcp"
	"github.com/pion/rtp/codecs"
	"github.com/pion/webrtc/v4"
	"github.com/pion/webrtc/v4/pkg/media"

	"github.com/palaver-chat/palaver/sfu"
)

// LoopbackAPI is a pion API gathering loopback UDP4 candidates only, without mDNS.
func LoopbackAPI() (*webrtc.API, error) {
	m := &webrtc.MediaEngine{}
	if err := m.RegisterDefaultCodecs(); err != nil {
		return nil, fmt.Errorf("codecs: %w", err)
	}
	reg := &interceptor.Registry{}
	if err := webrtc.RegisterDefaultInterceptors(m, reg); err != nil {
		return nil, fmt.Errorf("interceptors: %w", err)
	}
	se := webrtc.SettingEngine{}
	se.SetIncludeLoopbackCandidate(true)
	se.SetIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	return webrtc.NewAPI(webrtc.WithMediaEngine(m), webrtc.WithInterceptorRegistry(reg), webrtc.WithSettingEngine(se)), nil
}

// Peer is one participant's side of a call.
type Peer struct {
	Name    string
	PC      *webrtc.PeerConnection
	publish bool

	sendMu sync.Mutex
	send   func(sfu.Signal) error
	early  []webrtc.ICECandidateInit

	video, audio *webrtc.TrackLocalStaticSample
	wantKey      atomic.Bool
	realFrame    atomic.Pointer[[]byte]
	plis         atomic.Int32
	errs         chan error

	mu        sync.Mutex
	packets   map[string]map[string]int // stream (publisher participant id) → kind → packets
	keyframes map[string]time.Time      // stream → first keyframe received
	ended     map[string]int            // stream → tracks whose reading ended

	stop chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

// New makes a peer; with publish it adds a VP8 and an Opus track when the first offer arrives
// and writes a sample of each every 20 ms. A video frame is a keyframe only after a PLI, so a
// keyframe at a subscriber proves the keyframe request path.
func New(api *webrtc.API, name string, publish bool) (*Peer, error) {
	pc, err := api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		return nil, fmt.Errorf("peer connection: %w", err)
	}
	p := &Peer{Name: name, PC: pc, publish: publish, errs: make(chan error, 16),
		packets: map[string]map[string]int{}, keyframes: map[string]time.Time{}, ended: map[string]int{}, stop: make(chan struct{})}
	pc.OnTrack(p.onTrack)
	pc.OnICECandidate(func(c *webrtc.ICECandidate) {
		if c == nil {
			return
		}
		init := c.ToJSON()
		p.sendMu.Lock()
		defer p.sendMu.Unlock()
		if p.send == nil {
			p.early = append(p.early, init)
			return
		}
		_ = p.send(sfu.Signal{Type: sfu.SignalCandidate, Candidate: &init})
	})
	return p, nil
}

// SetSender sets where the peer's answers and candidates go; candidates gathered before are
// sent now.
func (p *Peer) SetSender(send func(sfu.Signal) error) {
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	p.send = send
	for i := range p.early {
		_ = send(sfu.Signal{Type: sfu.SignalCandidate, Candidate: &p.early[i]})
	}
	p.early = nil
}

func (p *Peer) sendSignal(sig sfu.Signal) error {
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	if p.send == nil {
		return errors.New("no sender set")
	}
	return p.send(sig)
}

// Errors reports signalling failures (offers that could not be applied).
func (p *Peer) Errors() <-chan error { return p.errs }

// HandleSignal applies a signal from the forwarding unit: it answers an offer and adds a
// candidate; errors and unknown types are returned.
func (p *Peer) HandleSignal(sig sfu.Signal) error {
	switch sig.Type {
	case sfu.SignalOffer:
		if err := p.PC.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: sig.SDP}); err != nil {
			return fmt.Errorf("%s: offer: %w", p.Name, err)
		}
		if p.publish && p.video == nil {
			if err := p.startPublishing(); err != nil {
				return err
			}
		}
		answer, err := p.PC.CreateAnswer(nil)
		if err == nil {
			err = p.PC.SetLocalDescription(answer)
		}
		if err != nil {
			return fmt.Errorf("%s: answer: %w", p.Name, err)
		}
		return p.sendSignal(sfu.Signal{Type: sfu.SignalAnswer, SDP: answer.SDP})
	case sfu.SignalCandidate:
		if sig.Candidate == nil {
			return fmt.Errorf("%s: candidate signal without a candidate", p.Name)
		}
		return p.PC.AddICECandidate(*sig.Candidate)
	case sfu.SignalError:
		return fmt.Errorf("%s: the server says: %s", p.Name, sig.Message)
	}
	return fmt.Errorf("%s: unknown signal %q", p.Name, sig.Type)
}

func (p *Peer) startPublishing() error {
	var err error
	if p.video, err = webrtc.NewTrackLocalStaticSample(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8}, "video", p.Name); err != nil {
		return err
	}
	if p.audio, err = webrtc.NewTrackLocalStaticSample(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus}, "audio", p.Name); err != nil {
		return err
	}
	vs, err := p.PC.AddTrack(p.video)
	if err != nil {
		return err
	}
	as, err := p.PC.AddTrack(p.audio)
	if err != nil {
		return err
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
			frame[0] = 0x11 // VP8 frame tag with P=1: an interframe
			if p.wantKey.Swap(false) {
				frame[0] = 0x10
			}
			video := frame
			if real := p.realFrame.Load(); real != nil {
				video = *real
			}
			_ = p.video.WriteSample(media.Sample{Data: video, Duration: 20 * time.Millisecond})
			_ = p.audio.WriteSample(media.Sample{Data: frame[:80], Duration: 20 * time.Millisecond})
		}
	}()
	return nil
}

func (p *Peer) onTrack(tr *webrtc.TrackRemote, _ *webrtc.RTPReceiver) {
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

// Count is the packets of kind ("audio", "video") received from the publisher with that
// participant id.
func (p *Peer) Count(stream, kind string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.packets[stream][kind]
}

// Streams lists the publishers heard from.
func (p *Peer) Streams() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.packets))
	for s := range p.packets {
		out = append(out, s)
	}
	return out
}

// KeyframeAt is when the first keyframe of the publisher arrived (zero: none yet).
func (p *Peer) KeyframeAt(stream string) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.keyframes[stream]
}

// Ended counts the publisher's tracks that stopped arriving (removed from the call).
func (p *Peer) Ended(stream string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ended[stream]
}

// SendVideoFrame makes every video sample from now on frame, a complete VP8 keyframe, instead of
// the synthetic frames: a real decoder (a browser's) can show it.
func (p *Peer) SendVideoFrame(frame []byte) { p.realFrame.Store(&frame) }

// PLIs counts the keyframe requests this peer received as a publisher.
func (p *Peer) PLIs() int { return int(p.plis.Load()) }

// Close stops publishing and closes the peer connection.
func (p *Peer) Close() {
	p.once.Do(func() {
		close(p.stop)
		p.PC.Close()
		p.wg.Wait()
	})
}

// Conn is a peer connected through a node's signalling WebSocket.
type Conn struct {
	*Peer
	WS     *websocket.Conn
	closed chan struct{}
	status atomic.Int32
	reason atomic.Value
	errs   chan error
}

// Dial opens the signalling WebSocket at url (from the token route) and runs the peer on it
// until the server closes it or Close.
func Dial(ctx context.Context, api *webrtc.API, url, name string, publish bool) (*Conn, error) {
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	ws.SetReadLimit(1 << 20)
	p, err := New(api, name, publish)
	if err != nil {
		ws.Close(websocket.StatusInternalError, "")
		return nil, err
	}
	c := &Conn{Peer: p, WS: ws, closed: make(chan struct{}), errs: make(chan error, 16)}
	var wmu sync.Mutex
	p.SetSender(func(sig sfu.Signal) error {
		data, err := json.Marshal(sig)
		if err != nil {
			return err
		}
		wmu.Lock()
		defer wmu.Unlock()
		wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return ws.Write(wctx, websocket.MessageText, data)
	})
	go func() {
		defer close(c.closed)
		for {
			_, data, err := ws.Read(context.Background())
			if err != nil {
				c.status.Store(int32(websocket.CloseStatus(err)))
				var ce websocket.CloseError
				if errors.As(err, &ce) {
					c.reason.Store(ce.Reason)
				}
				return
			}
			var sig sfu.Signal
			if err := json.Unmarshal(data, &sig); err != nil {
				c.report(fmt.Errorf("%s: bad signal: %w", name, err))
				continue
			}
			if err := p.HandleSignal(sig); err != nil {
				c.report(err)
			}
		}
	}()
	return c, nil
}

func (c *Conn) report(err error) {
	select {
	case c.errs <- err:
	default:
	}
}

// Errors reports signalling failures and the server's error signals.
func (c *Conn) Errors() <-chan error { return c.errs }

// Closed is closed when the signalling WebSocket ended.
func (c *Conn) Closed() <-chan struct{} { return c.closed }

// CloseStatus is the close code the server sent (-1: none), valid after Closed.
func (c *Conn) CloseStatus() websocket.StatusCode { return websocket.StatusCode(c.status.Load()) }

// CloseReason is the reason the server sent with its close code, valid after Closed.
func (c *Conn) CloseReason() string { r, _ := c.reason.Load().(string); return r }

// Leave says leave, closes the WebSocket and the peer connection.
func (c *Conn) Leave() {
	_ = c.sendSignal(sfu.Signal{Type: sfu.SignalLeave})
	c.WS.Close(websocket.StatusNormalClosure, "")
	<-c.closed
	c.Peer.Close()
}
