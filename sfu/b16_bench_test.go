package sfu_test

import (
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"

	"github.com/palaver-chat/palaver/sfu"
	"github.com/palaver-chat/palaver/testcluster/avclient"
)

// BenchmarkB16 is scenario B16 of BENCHMARKS.md: one publisher sends ~1 Mbit/s of video
// (1100-byte RTP packets, 115 a second, each carrying its send time) through the forwarding unit
// to 10, 50 and 100 subscribers on loopback, for 5 s once all are connected. Reported: process
// CPU per forwarded packet, p99 forwarding delay (publisher write to subscriber read) and loss.
func BenchmarkB16(b *testing.B) {
	for _, n := range []int{10, 50, 100} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			for range b.N {
				runB16(b, n, 5*time.Second)
			}
		})
	}
}

func runB16(b *testing.B, subscribers int, dur time.Duration) {
	s, err := sfu.New(sfu.Config{UDPAddr: "127.0.0.1:0", AllowPrivateCandidates: true, MaxParticipants: subscribers + 1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	api, err := avclient.LoopbackAPI()
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var delays []time.Duration
	var received atomic.Int64
	var subs []*member
	for i := range subscribers {
		m := join(b, s, api, "#b16", "B", fmt.Sprintf("sub%d", i), false)
		m.PC.OnTrack(func(tr *webrtc.TrackRemote, _ *webrtc.RTPReceiver) {
			for {
				pkt, _, err := tr.ReadRTP()
				if err != nil {
					return
				}
				if len(pkt.Payload) >= 8 {
					d := time.Duration(time.Now().UnixNano() - int64(binary.BigEndian.Uint64(pkt.Payload)))
					received.Add(1)
					mu.Lock()
					delays = append(delays, d)
					mu.Unlock()
				}
			}
		})
		subs = append(subs, m)
	}
	defer func() {
		for _, m := range subs {
			m.close()
		}
	}()
	// The publisher writes raw RTP: the payload starts with the send time.
	track, err := webrtc.NewTrackLocalStaticRTP(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8}, "video", "publisher")
	if err != nil {
		b.Fatal(err)
	}
	// The track is added before the first offer, so it answers the video transceiver offered.
	pubPeer := joinWith(b, s, api, "#b16", "B", "publisher", false, func(pc *webrtc.PeerConnection) {
		sender, err := pc.AddTrack(track)
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			for {
				if _, _, err := sender.ReadRTCP(); err != nil {
					return
				}
			}
		}()
	})
	defer pubPeer.close()
	pkt := &rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 96, SSRC: 1}, Payload: make([]byte, 1100)}
	write := func() {
		pkt.SequenceNumber++
		pkt.Timestamp += 90000 / 115
		binary.BigEndian.PutUint64(pkt.Payload, uint64(time.Now().UnixNano()))
		_ = track.WriteRTP(pkt)
	}
	// Warm up until every subscriber is bound, then measure.
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(time.Second / 115)
	defer tick.Stop()
	for {
		<-tick.C
		write()
		rep, _ := s.Inspect("#b16")
		bound := 0
		for _, p := range rep.Participants {
			for _, tr := range p.Tracks {
				bound = tr.Subscribers
			}
		}
		if bound == subscribers {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d subscribers bound", bound, subscribers)
		}
	}
	time.Sleep(500 * time.Millisecond) // let the warm-up packets drain before counting
	mu.Lock()
	delays = delays[:0]
	mu.Unlock()
	received.Store(0)
	before := s.Stats().PacketsOut
	cpu0 := cpuTime()
	sent := 0
	b.ResetTimer()
	end := time.Now().Add(dur)
	for time.Now().Before(end) {
		<-tick.C
		write()
		sent++
	}
	time.Sleep(300 * time.Millisecond) // the last packets in flight
	b.StopTimer()
	cpu := cpuTime() - cpu0
	forwarded := s.Stats().PacketsOut - before
	mu.Lock()
	sort.Slice(delays, func(i, j int) bool { return delays[i] < delays[j] })
	var p50, p99 time.Duration
	if len(delays) > 0 {
		p50, p99 = delays[len(delays)/2], delays[len(delays)*99/100]
	}
	mu.Unlock()
	want := int64(sent * subscribers)
	loss := float64(want-received.Load()) / float64(want)
	if forwarded > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(forwarded), "cpu-ns/fwd-pkt")
	}
	b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
	b.ReportMetric(loss*100, "loss-%")
	b.ReportMetric(float64(forwarded)/dur.Seconds(), "fwd-pkt/s")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
