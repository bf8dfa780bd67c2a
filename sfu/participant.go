package sfu

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/webrtc/v4"
)

// Signal is one signalling message, JSON on the gateway's WebSocket. The SFU sends offers,
// candidates and errors; the client sends answers, candidates and leave.
type Signal struct {
	Type      string                   `json:"type"` // offer | answer | candidate | leave | error
	SDP       string                   `json:"sdp,omitempty"`
	Candidate *webrtc.ICECandidateInit `json:"candidate,omitempty"`
	Message   string                   `json:"message,omitempty"` // error: what went wrong
}

// Signal types.
const (
	SignalOffer     = "offer"
	SignalAnswer    = "answer"
	SignalCandidate = "candidate"
	SignalLeave     = "leave"
	SignalError     = "error"
)

// maxPendingCandidates bounds the remote candidates held until the answer arrives.
const maxPendingCandidates = 64

// ErrBadSignal wraps every refusal of Handle.
var ErrBadSignal = errors.New("sfu: bad signal")

// Participant is one account's peer connection in a call.
type Participant struct {
	call    *call
	id      string
	account string
	joined  time.Time
	pc      *webrtc.PeerConnection
	out     func(Signal) error

	negMu       sync.Mutex // the offer/answer exchange
	awaiting    bool       // an offer is outstanding
	pending     bool       // a renegotiation was asked for meanwhile
	remoteCands []webrtc.ICECandidateInit

	sigMu       sync.Mutex // outgoing order: an offer before the candidates it gathers
	offerSent   bool
	queuedCands []webrtc.ICECandidateInit

	subMu sync.Mutex
	subs  map[*forwardTrack]*webrtc.RTPSender

	kick      chan struct{}
	done      chan struct{}
	closing   atomic.Bool
	closeOnce sync.Once
	reason    atomic.Value // string
}

func newParticipant(c *call, id, account string, out func(Signal) error) (*Participant, error) {
	pc, err := c.sfu.api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		return nil, fmt.Errorf("sfu: peer connection: %w", err)
	}
	p := &Participant{call: c, id: id, account: account, joined: time.Now(), pc: pc, out: out,
		subs: map[*forwardTrack]*webrtc.RTPSender{}, kick: make(chan struct{}, 1), done: make(chan struct{})}
	for _, kind := range []webrtc.RTPCodecType{webrtc.RTPCodecTypeAudio, webrtc.RTPCodecTypeVideo} {
		if _, err := pc.AddTransceiverFromKind(kind, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionRecvonly}); err != nil {
			pc.Close()
			return nil, fmt.Errorf("sfu: %s transceiver: %w", kind, err)
		}
	}
	pc.OnICECandidate(p.localCandidate)
	pc.OnTrack(p.onTrack)
	pc.OnConnectionStateChange(func(st webrtc.PeerConnectionState) {
		switch st {
		case webrtc.PeerConnectionStateConnected:
			p.subMu.Lock()
			tracks := make([]*forwardTrack, 0, len(p.subs))
			for ft := range p.subs {
				tracks = append(tracks, ft)
			}
			p.subMu.Unlock()
			for _, ft := range tracks {
				ft.requestKeyframe()
			}
		case webrtc.PeerConnectionStateFailed:
			p.close("connection failed", true)
		}
	})
	return p, nil
}

// ID is the participant's id in this unit (the stream id of its tracks at the others).
func (p *Participant) ID() string { return p.id }

// Account is the account the gateway joined.
func (p *Participant) Account() string { return p.account }

// Done is closed when the participant has left the call, for whatever reason.
func (p *Participant) Done() <-chan struct{} { return p.done }

// Reason says why the participant left (after Done).
func (p *Participant) Reason() string {
	r, _ := p.reason.Load().(string)
	return r
}

// Leave takes the participant out of the call, as if it had said "leave".
func (p *Participant) Leave(reason string) { p.close(reason, true) }

// Handle applies one signal from the client: an answer, a candidate or leave.
func (p *Participant) Handle(sig Signal) error {
	if p.closing.Load() {
		return ErrClosed
	}
	switch sig.Type {
	case SignalAnswer:
		return p.answer(sig.SDP)
	case SignalCandidate:
		if sig.Candidate == nil || sig.Candidate.Candidate == "" {
			return fmt.Errorf("%w: a candidate signal needs a candidate", ErrBadSignal)
		}
		return p.remoteCandidate(*sig.Candidate)
	case SignalLeave:
		p.close("left the call", true)
		return nil
	default:
		return fmt.Errorf("%w: type %q (want answer, candidate or leave)", ErrBadSignal, sig.Type)
	}
}

func (p *Participant) answer(sdp string) error {
	if sdp == "" {
		return fmt.Errorf("%w: an answer needs sdp", ErrBadSignal)
	}
	p.negMu.Lock()
	if !p.awaiting {
		p.negMu.Unlock()
		return fmt.Errorf("%w: no offer is waiting for an answer", ErrBadSignal)
	}
	if err := p.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: p.call.sfu.filterSDP(sdp)}); err != nil {
		p.negMu.Unlock()
		return p.refusal("answer", err)
	}
	p.awaiting = false
	cands := p.remoteCands
	p.remoteCands = nil
	again := p.pending
	p.negMu.Unlock()
	for _, c := range cands {
		if err := p.pc.AddICECandidate(c); err != nil && !p.closing.Load() {
			p.call.sfu.log.Debug("buffered candidate refused", "participant", p.id, "err", err)
		}
	}
	if again {
		p.requestNegotiation()
	}
	return nil
}

func (p *Participant) remoteCandidate(c webrtc.ICECandidateInit) error {
	if !p.call.sfu.candidateAllowed(c.Candidate) {
		// Dropped, not refused: browsers offer private and .local candidates beside public ones.
		p.call.sfu.log.Debug("remote candidate dropped", "participant", p.id, "candidate", c.Candidate)
		return nil
	}
	p.negMu.Lock()
	if p.pc.RemoteDescription() == nil {
		defer p.negMu.Unlock()
		if len(p.remoteCands) >= maxPendingCandidates {
			return fmt.Errorf("%w: more than %d candidates before the answer", ErrBadSignal, maxPendingCandidates)
		}
		p.remoteCands = append(p.remoteCands, c)
		return nil
	}
	p.negMu.Unlock()
	if err := p.pc.AddICECandidate(c); err != nil {
		return p.refusal("candidate", err)
	}
	return nil
}

// refusal is the error for a signal the peer connection refused: ErrClosed when the participant
// was closed meanwhile (an operator ends the call as the client answers; the connection then
// refuses because it is closed, and the client is owed no error for it), else ErrBadSignal.
func (p *Participant) refusal(what string, err error) error {
	if p.closing.Load() {
		return ErrClosed
	}
	return fmt.Errorf("%w: %s: %v", ErrBadSignal, what, err)
}

// localCandidate sends a gathered candidate, after the offer that started its gathering.
func (p *Participant) localCandidate(c *webrtc.ICECandidate) {
	if c == nil || p.closing.Load() {
		return
	}
	init := c.ToJSON()
	p.sigMu.Lock()
	defer p.sigMu.Unlock()
	if !p.offerSent {
		p.queuedCands = append(p.queuedCands, init)
		return
	}
	p.send(Signal{Type: SignalCandidate, Candidate: &init})
}

// send hands a signal to the gateway; a refusal (its queue is full or closed) ends the
// participant. Called with sigMu held.
func (p *Participant) send(sig Signal) {
	if err := p.out(sig); err != nil && !p.closing.Load() {
		go p.close("signalling failed: "+err.Error(), true)
	}
}

// requestNegotiation asks for a new offer, debounced by the negotiation loop.
func (p *Participant) requestNegotiation() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// start runs the negotiation loop.
func (p *Participant) start() {
	go func() {
		delay := p.call.sfu.cfg.NegotiationDelay
		for {
			select {
			case <-p.done:
				return
			case <-p.kick:
			}
			if delay > 0 {
				t := time.NewTimer(delay)
				select {
				case <-p.done:
					t.Stop()
					return
				case <-t.C:
				}
			}
			p.negotiate()
		}
	}()
}

// negotiate sends an offer now, or marks one pending while another is outstanding.
func (p *Participant) negotiate() {
	p.negMu.Lock()
	defer p.negMu.Unlock()
	if p.closing.Load() {
		return
	}
	if p.awaiting || p.pc.SignalingState() != webrtc.SignalingStateStable {
		p.pending = true
		return
	}
	p.pending = false
	offer, err := p.pc.CreateOffer(nil)
	if err == nil {
		err = p.pc.SetLocalDescription(offer)
	}
	if err != nil {
		if !p.closing.Load() {
			p.call.sfu.log.Warn("offer failed", "channel", p.call.channel, "participant", p.id, "err", err)
			go p.close("negotiation failed", true)
		}
		return
	}
	p.awaiting = true
	p.sigMu.Lock()
	p.send(Signal{Type: SignalOffer, SDP: offer.SDP})
	p.offerSent = true
	queued := p.queuedCands
	p.queuedCands = nil
	for i := range queued {
		p.send(Signal{Type: SignalCandidate, Candidate: &queued[i]})
	}
	p.sigMu.Unlock()
}

// onTrack starts forwarding a track the participant publishes.
func (p *Participant) onTrack(remote *webrtc.TrackRemote, receiver *webrtc.RTPReceiver) {
	ft, err := newForwardTrack(p, remote)
	if err != nil {
		p.call.sfu.log.Warn("cannot forward track", "participant", p.id, "kind", remote.Kind().String(), "err", err)
		return
	}
	go func() { // interceptors see the publisher's reports only when they are read
		for {
			if _, _, err := receiver.ReadRTCP(); err != nil {
				return
			}
		}
	}()
	if !p.call.publish(ft) {
		return
	}
	ft.requestKeyframe()
	ft.forward(remote)
	p.call.unpublish(ft)
}

// subscribe adds a forwarded track to this participant's connection (negotiated later).
func (p *Participant) subscribe(ft *forwardTrack) {
	p.subMu.Lock()
	defer p.subMu.Unlock()
	if p.closing.Load() || p.subs[ft] != nil {
		return
	}
	tr, err := p.pc.AddTransceiverFromTrack(&subTrack{TrackLocalStaticRTP: ft.local, ft: ft, sub: p},
		webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionSendonly})
	if err != nil {
		if !p.closing.Load() {
			p.call.sfu.log.Warn("cannot subscribe", "participant", p.id, "track", ft.id, "err", err)
		}
		return
	}
	sender := tr.Sender()
	p.subs[ft] = sender
	go func() { // keyframe requests from the subscriber; also runs the NACK responder
		for {
			pkts, _, err := sender.ReadRTCP()
			if err != nil {
				return
			}
			for _, pkt := range pkts {
				switch pkt.(type) {
				case *rtcp.PictureLossIndication, *rtcp.FullIntraRequest:
					ft.requestKeyframe()
				}
			}
		}
	}()
}

// unsubscribe removes a forwarded track; it reports whether the track was there.
func (p *Participant) unsubscribe(ft *forwardTrack) bool {
	p.subMu.Lock()
	sender := p.subs[ft]
	delete(p.subs, ft)
	p.subMu.Unlock()
	if sender == nil {
		return false
	}
	if err := p.pc.RemoveTrack(sender); err != nil && !p.closing.Load() {
		p.call.sfu.log.Debug("remove track", "participant", p.id, "err", err)
	}
	return true
}

// close ends the participant: it leaves the call, its tracks leave the others, its connection
// closes. notify reports the departure through Config.OnLeave.
func (p *Participant) close(reason string, notify bool) {
	p.closeOnce.Do(func() {
		p.reason.Store(reason)
		p.closing.Store(true)
		p.call.remove(p)
		if err := p.pc.Close(); err != nil {
			p.call.sfu.log.Debug("closing peer connection", "participant", p.id, "err", err)
		}
		close(p.done)
		p.call.sfu.log.Debug("participant left", "channel", p.call.channel, "participant", p.id, "reason", reason)
		if hook := p.call.sfu.cfg.OnLeave; notify && hook != nil {
			go hook(p.call.channel, p.call.id, p.account, reason)
		}
	})
}
