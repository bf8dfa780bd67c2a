package sfu_test

import (
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/palaver-chat/palaver/sfu"
	"github.com/palaver-chat/palaver/testcluster/poll"
)

func TestRemoteAddrAllowed(t *testing.T) {
	for _, c := range []struct {
		addr          string
		public, local bool // allowed by default, allowed with AllowPrivateCandidates
	}{
		{"8.8.8.8", true, true},
		{"2001:4860:4860::8888", true, true},
		{"127.0.0.1", false, true},
		{"::1", false, true},
		{"10.1.2.3", false, true},
		{"172.16.0.1", false, true},
		{"192.168.1.1", false, true},
		{"100.64.0.1", false, true},
		{"169.254.169.254", false, true},
		{"fe80::1", false, true},
		{"fd00::1", false, true},
		{"::ffff:127.0.0.1", false, true},
		{"::ffff:10.0.0.1", false, true},
		{"0.0.0.0", false, false},
		{"224.0.0.1", false, false},
		{"fe80::1%eth0", false, false},
		{"abcd-1234.local", false, false},
		{"metadata.internal", false, false},
	} {
		if got := sfu.RemoteAddrAllowed(c.addr, false); got != c.public {
			t.Errorf("%s: allowed %v, want %v", c.addr, got, c.public)
		}
		if got := sfu.RemoteAddrAllowed(c.addr, true); got != c.local {
			t.Errorf("%s with private candidates allowed: %v, want %v", c.addr, got, c.local)
		}
	}
}

// udpSink counts the datagrams sent to a loopback UDP address.
type udpSink struct {
	conn *net.UDPConn
	n    atomic.Int64
}

func newSink(t *testing.T, ip string) *udpSink {
	t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(ip)})
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	s := &udpSink{conn: conn}
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := conn.ReadFrom(buf); err != nil {
				return
			}
			s.n.Add(1)
		}
	}()
	t.Cleanup(func() { conn.Close() })
	return s
}

func (s *udpSink) port() int { return s.conn.LocalAddr().(*net.UDPAddr).Port }

// TestRemoteCandidatesFiltered: a participant naming another local address as its candidate
// (trickled, or in its answer) must not make the unit send UDP there. The attacker answers the
// offer and never takes part in ICE itself. The victim listens on 127.0.0.1; a sentinel on
// 127.0.0.2, which the test's policy allows, is named after it: once the sentinel has had several
// connectivity checks, the unit had every chance to check the victim.
func TestRemoteCandidatesFiltered(t *testing.T) {
	for _, c := range []struct {
		name   string
		allow  func(string) bool
		victim bool // the victim gets datagrams
	}{
		{"filtered", func(addr string) bool { return addr == "127.0.0.2" }, false},
		{"unfiltered", func(string) bool { return true }, true}, // what the attack did before
	} {
		t.Run(c.name, func(t *testing.T) {
			victim, sentinel := newSink(t, "127.0.0.1"), newSink(t, "127.0.0.2")
			s := newSFU(t)
			defer s.Close()
			s.SetCandidateFilter(c.allow)
			offers := make(chan string, 4)
			part, err := s.Join("#call", "C1", "mallory", func(sig sfu.Signal) error {
				if sig.Type == sfu.SignalOffer {
					select {
					case offers <- sig.SDP:
					default:
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			pc, err := clientAPI(t).NewPeerConnection(webrtc.Configuration{})
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: <-offers}); err != nil {
				t.Fatal(err)
			}
			answer, err := pc.CreateAnswer(nil)
			if err != nil {
				t.Fatal(err)
			}
			// The answer names the victim; the attacker's peer connection never gathers or answers checks.
			sdp := strings.Replace(answer.SDP, "a=ice-ufrag:", fmt.Sprintf("a=candidate:2 1 udp 2130706431 127.0.0.1 %d typ host\r\na=ice-ufrag:", victim.port()), 1)
			if err := part.Handle(sfu.Signal{Type: sfu.SignalAnswer, SDP: sdp}); err != nil {
				t.Fatal(err)
			}
			for _, ip := range []string{"127.0.0.1", "127.0.0.2"} {
				port := victim.port()
				if ip == "127.0.0.2" {
					port = sentinel.port()
				}
				if err := part.Handle(sfu.Signal{Type: sfu.SignalCandidate, Candidate: &webrtc.ICECandidateInit{
					Candidate: fmt.Sprintf("candidate:1 1 udp 2130706431 %s %d typ host", ip, port)}}); err != nil {
					t.Fatalf("a dropped candidate is not an error: %v", err)
				}
			}
			if c.victim {
				poll.Within(t, 20*time.Second, "the victim gets datagrams", func() bool { return victim.n.Load() > 0 })
				return
			}
			poll.Within(t, 20*time.Second, "the sentinel gets connectivity checks", func() bool { return sentinel.n.Load() >= 3 })
			if n := victim.n.Load(); n != 0 {
				t.Fatalf("the unit sent %d datagrams to a loopback candidate", n)
			}
		})
	}
}
