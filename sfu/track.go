package sfu

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"
)

// forwardTrack is one published track and the local track its packets are copied into, bound
// to every subscriber.
type forwardTrack struct {
	pub   *Participant
	id    string
	kind  webrtc.RTPCodecType
	codec string
	ssrc  uint32
	local *webrtc.TrackLocalStaticRTP

	packetsIn, bytesIn, packetsOut, bytesOut atomic.Uint64
	expected                                 atomic.Uint64 // from the sequence numbers seen
	bound                                    atomic.Int64  // subscribers the track is bound to
	lastPacket                               atomic.Int64  // unix ns

	kfMu       sync.Mutex
	lastKF     time.Time
	kfTimer    *time.Timer
	kfRequests uint64
	stopped    bool
}

func newForwardTrack(p *Participant, remote *webrtc.TrackRemote) (*forwardTrack, error) {
	id := p.id + "-" + remote.Kind().String() + "-" + strconv.FormatUint(uint64(remote.SSRC()), 10)
	local, err := webrtc.NewTrackLocalStaticRTP(remote.Codec().RTPCodecCapability, id, p.id)
	if err != nil {
		return nil, err
	}
	mime := remote.Codec().MimeType
	if _, after, ok := strings.Cut(mime, "/"); ok {
		mime = after
	}
	return &forwardTrack{pub: p, id: id, kind: remote.Kind(), codec: mime, ssrc: uint32(remote.SSRC()), local: local}, nil
}

// forward copies the remote track's packets to the subscribers until the track ends.
func (ft *forwardTrack) forward(remote *webrtc.TrackRemote) {
	s := ft.pub.call.sfu
	buf := make([]byte, 1500)
	var pkt rtp.Packet
	var first, highest uint64 // extended sequence numbers
	var cycles uint64
	var last uint16
	started := false
	for {
		n, _, err := remote.Read(buf)
		if err != nil {
			return
		}
		if err := pkt.Unmarshal(buf[:n]); err != nil {
			continue
		}
		now := time.Now()
		seq := pkt.SequenceNumber
		if !started {
			started, first, highest, last = true, uint64(seq), uint64(seq), seq
		} else {
			if seq < last && last-seq > 0x8000 {
				cycles += 1 << 16
			}
			last = seq
			if ext := cycles | uint64(seq); ext > highest {
				highest = ext
			}
		}
		ft.expected.Store(highest - first + 1)
		// Extension ids are negotiated per connection: the publisher's mean nothing downstream.
		pkt.Header.Extension = false
		pkt.Header.Extensions = nil
		ft.packetsIn.Add(1)
		ft.bytesIn.Add(uint64(n))
		s.stats.packetsIn.Add(1)
		s.stats.bytesIn.Add(uint64(n))
		ft.lastPacket.Store(now.UnixNano())
		if err := ft.local.WriteRTP(&pkt); err != nil && errors.Is(err, io.ErrClosedPipe) {
			return
		}
		if b := uint64(max(ft.bound.Load(), 0)); b > 0 {
			ft.packetsOut.Add(b)
			ft.bytesOut.Add(b * uint64(n))
			s.stats.packetsOut.Add(b)
			s.stats.bytesOut.Add(b * uint64(n))
		}
		if s.cfg.ObserveForward != nil {
			s.cfg.ObserveForward(time.Since(now))
		}
	}
}

// requestKeyframe asks the publisher for a keyframe (PLI), at most one per KeyframeInterval;
// a request inside the interval is sent when it ends.
func (ft *forwardTrack) requestKeyframe() {
	if ft.kind != webrtc.RTPCodecTypeVideo {
		return
	}
	interval := ft.pub.call.sfu.cfg.KeyframeInterval
	ft.kfMu.Lock()
	defer ft.kfMu.Unlock()
	if ft.stopped || ft.kfTimer != nil {
		return
	}
	if wait := interval - time.Since(ft.lastKF); wait > 0 {
		ft.kfTimer = time.AfterFunc(wait, func() {
			ft.kfMu.Lock()
			ft.kfTimer = nil
			stopped := ft.stopped
			if !stopped {
				ft.markKeyframeLocked()
			}
			ft.kfMu.Unlock()
			if !stopped {
				ft.sendPLI()
			}
		})
		return
	}
	ft.markKeyframeLocked()
	go ft.sendPLI()
}

func (ft *forwardTrack) markKeyframeLocked() {
	ft.lastKF = time.Now()
	ft.kfRequests++
	ft.pub.call.sfu.stats.keyframeRequests.Add(1)
}

func (ft *forwardTrack) sendPLI() {
	if err := ft.pub.pc.WriteRTCP([]rtcp.Packet{&rtcp.PictureLossIndication{MediaSSRC: ft.ssrc}}); err != nil && !ft.pub.closing.Load() {
		ft.pub.call.sfu.log.Debug("keyframe request", "track", ft.id, "err", err)
	}
}

// stop cancels a pending keyframe request.
func (ft *forwardTrack) stop() {
	ft.kfMu.Lock()
	defer ft.kfMu.Unlock()
	ft.stopped = true
	if ft.kfTimer != nil {
		ft.kfTimer.Stop()
		ft.kfTimer = nil
	}
}

// subTrack is a forwarded track as one subscriber's connection sees it: it counts bindings and
// asks for a keyframe when a connected subscriber is bound.
type subTrack struct {
	*webrtc.TrackLocalStaticRTP
	ft  *forwardTrack
	sub *Participant
}

func (t *subTrack) Bind(ctx webrtc.TrackLocalContext) (webrtc.RTPCodecParameters, error) {
	codec, err := t.TrackLocalStaticRTP.Bind(ctx)
	if err == nil {
		t.ft.bound.Add(1)
		if t.sub.pc.ConnectionState() == webrtc.PeerConnectionStateConnected {
			go t.ft.requestKeyframe()
		}
	}
	return codec, err
}

func (t *subTrack) Unbind(ctx webrtc.TrackLocalContext) error {
	err := t.TrackLocalStaticRTP.Unbind(ctx)
	if err == nil {
		t.ft.bound.Add(-1)
	}
	return err
}
