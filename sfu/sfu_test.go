package sfu_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"
	"go.uber.org/goleak"

	"github.com/palaver-chat/palaver/sfu"
	"github.com/palaver-chat/palaver/testcluster/avclient"
	"github.com/palaver-chat/palaver/testcluster/poll"
)

func clientAPI(t testing.TB) *webrtc.API {
	t.Helper()
	api, err := avclient.LoopbackAPI()
	if err != nil {
		t.Fatal(err)
	}
	return api
}

func newSFU(t testing.TB) *sfu.SFU {
	t.Helper()
	s, err := sfu.New(sfu.Config{UDPAddr: "127.0.0.1:0", AllowPrivateCandidates: true, KeyframeInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// member is a test peer joined to the SFU directly: signals go through Join's sink and Handle.
type member struct {
	*avclient.Peer
	part    *sfu.Participant
	signals chan sfu.Signal
	stop    chan struct{}
	wg      sync.WaitGroup
}

func join(t testing.TB, s *sfu.SFU, api *webrtc.API, channel, callID, name string, publish bool) *member {
	t.Helper()
	return joinWith(t, s, api, channel, callID, name, publish, nil)
}

// joinWith is join with prepare run on the peer connection before the first offer arrives.
func joinWith(t testing.TB, s *sfu.SFU, api *webrtc.API, channel, callID, name string, publish bool, prepare func(*webrtc.PeerConnection)) *member {
	t.Helper()
	p, err := avclient.New(api, name, publish)
	if err != nil {
		t.Fatal(err)
	}
	if prepare != nil {
		prepare(p.PC)
	}
	m := &member{Peer: p, signals: make(chan sfu.Signal, 256), stop: make(chan struct{})}
	part, err := s.Join(channel, callID, name, func(sig sfu.Signal) error {
		select {
		case m.signals <- sig:
			return nil
		default:
			return errors.New("signal queue full")
		}
	})
	if err != nil {
		p.Close()
		t.Fatalf("%s: join: %v", name, err)
	}
	m.part = part
	p.SetSender(func(sig sfu.Signal) error {
		if err := part.Handle(sig); err != nil && !errors.Is(err, sfu.ErrClosed) {
			t.Errorf("%s: %s refused: %v", name, sig.Type, err)
		}
		return nil
	})
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for {
			select {
			case <-m.stop:
				return
			case sig := <-m.signals:
				if err := p.HandleSignal(sig); err != nil {
					t.Errorf("%v", err)
				}
			}
		}
	}()
	return m
}

func (m *member) close() {
	close(m.stop)
	m.wg.Wait()
	m.Peer.Close()
}

func TestCallForwardsEveryoneToEveryone(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := newSFU(t)
	api := clientAPI(t)
	var peers []*member
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
		ids[p.Name] = p.part.ID()
	}
	for _, rx := range peers {
		for _, tx := range peers {
			if rx == tx {
				continue
			}
			for _, kind := range []string{"audio", "video"} {
				poll.Within(t, 15*time.Second, rx.Name+" receives "+tx.Name+"'s "+kind, func() bool {
					return rx.Count(ids[tx.Name], kind) >= 50
				})
			}
		}
		if n := rx.Count(ids[rx.Name], "video") + rx.Count(ids[rx.Name], "audio"); n != 0 {
			t.Errorf("%s received %d packets of its own", rx.Name, n)
		}
	}

	// A late joiner gets every track and a keyframe quickly.
	joined := time.Now()
	dave := join(t, s, api, "#call", "C1", "dave", false)
	peers = append(peers, dave)
	for _, tx := range peers[:3] {
		poll.Within(t, 10*time.Second, "dave receives a keyframe of "+tx.Name, func() bool { return !dave.KeyframeAt(ids[tx.Name]).IsZero() })
		t.Logf("keyframe of %s at the late joiner after %s", tx.Name, dave.KeyframeAt(ids[tx.Name]).Sub(joined))
		poll.Within(t, 10*time.Second, "dave receives "+tx.Name+"'s audio", func() bool { return dave.Count(ids[tx.Name], "audio") > 10 })
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
	for _, rx := range []*member{peers[0], peers[2], dave} {
		poll.Within(t, 10*time.Second, rx.Name+"'s copies of bob's tracks end", func() bool { return rx.Ended(ids["bob"]) == 2 })
	}
	poll.Within(t, 10*time.Second, "bob's peer connection sees the close", func() bool {
		st := bob.PC.ConnectionState()
		return st == webrtc.PeerConnectionStateClosed || st == webrtc.PeerConnectionStateFailed || st == webrtc.PeerConnectionStateDisconnected
	})
	base := peers[0].Count(ids["carol"], "video")
	poll.Within(t, 10*time.Second, "alice still receives carol", func() bool { return peers[0].Count(ids["carol"], "video") > base+20 })
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
	s, err := sfu.New(sfu.Config{UDPAddr: "127.0.0.1:0", AllowPrivateCandidates: true, MaxParticipants: 1})
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

// TestSignalMeetingTheEnd: a client's answer or candidate that the peer connection refuses
// because the call ended while it was applied is ErrClosed (the signalling then closes quietly),
// not a bad signal reported to a client whose call is already over.
func TestSignalMeetingTheEnd(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := newSFU(t)
	defer s.Close()
	api := clientAPI(t)
	answerTo := func(t *testing.T, offer sfu.Signal) (string, *webrtc.PeerConnection) {
		t.Helper()
		pc, err := api.NewPeerConnection(webrtc.Configuration{})
		if err != nil {
			t.Fatal(err)
		}
		if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offer.SDP}); err != nil {
			t.Fatal(err)
		}
		answer, err := pc.CreateAnswer(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := pc.SetLocalDescription(answer); err != nil {
			t.Fatal(err)
		}
		return answer.SDP, pc
	}
	cand := webrtc.ICECandidateInit{Candidate: "candidate:1 1 udp 2130706431 127.0.0.1 9 typ host"}
	for _, tc := range []struct {
		name     string
		answered bool // the answer went in before the end; the late signal is a candidate
	}{
		{"an answer", false},
		{"a candidate after the answer", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := make(chan sfu.Signal, 64)
			p, err := s.Join("#end", "C-"+tc.name, "acct", func(sig sfu.Signal) error { out <- sig; return nil })
			if err != nil {
				t.Fatal(err)
			}
			offer := <-out
			if offer.Type != sfu.SignalOffer {
				t.Fatalf("first signal %+v", offer)
			}
			sdp, pc := answerTo(t, offer)
			defer pc.Close()
			late := sfu.Signal{Type: sfu.SignalAnswer, SDP: sdp}
			if tc.answered {
				if err := p.Handle(late); err != nil {
					t.Fatalf("answer: %v", err)
				}
				late = sfu.Signal{Type: sfu.SignalCandidate, Candidate: &cand}
			}
			if !s.End("#end", "C-"+tc.name, "over") {
				t.Fatal("end")
			}
			<-p.Done()
			err = p.HandleUnchecked(late)
			if !errors.Is(err, sfu.ErrClosed) || errors.Is(err, sfu.ErrBadSignal) {
				t.Fatalf("late %s: %v, want ErrClosed", late.Type, err)
			}
		})
	}
}
