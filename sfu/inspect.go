package sfu

import (
	"sort"
	"time"
)

// CallReport is the wire view of one call, for diagnosis: who is connected, what they publish
// and how forwarding goes.
type CallReport struct {
	Channel      string              `json:"channel"`
	CallID       string              `json:"call_id"`
	Started      time.Time           `json:"started"`
	Participants []ParticipantReport `json:"participants"`
}

// ParticipantReport is one participant's connection.
type ParticipantReport struct {
	ID       string        `json:"id"`
	Account  string        `json:"account"`
	Joined   time.Time     `json:"joined"`
	ICE      string        `json:"ice_state"`        // new, checking, connected, completed, disconnected, failed, closed
	DTLS     string        `json:"dtls_state"`       // new, connecting, connected, closed, failed
	PC       string        `json:"connection_state"` // the peer connection's state
	Signal   string        `json:"signaling_state"`
	Tracks   []TrackReport `json:"tracks"`     // published by this participant
	Receives int           `json:"subscribed"` // tracks of the others it is sent
}

// TrackReport is one published track and its forwarding.
type TrackReport struct {
	ID                  string    `json:"id"`
	Kind                string    `json:"kind"` // audio | video
	Codec               string    `json:"codec"`
	SSRC                uint32    `json:"ssrc"`
	PacketsReceived     uint64    `json:"packets_received"`
	BytesReceived       uint64    `json:"bytes_received"`
	PacketsForwarded    uint64    `json:"packets_forwarded"` // summed over subscribers
	BytesForwarded      uint64    `json:"bytes_forwarded"`
	PacketsLost         uint64    `json:"packets_lost"` // publisher → SFU, after retransmissions
	LossRatio           float64   `json:"loss_ratio"`
	Subscribers         int       `json:"subscribers"` // bindings now
	LastPacket          time.Time `json:"last_packet,omitzero"`
	KeyframeRequests    uint64    `json:"keyframe_requests"`
	LastKeyframeRequest time.Time `json:"last_keyframe_request,omitzero"`
}

// Inspect reports the channel's call on this unit, if there is one.
func (s *SFU) Inspect(channel string) (CallReport, bool) {
	c := s.call(channel)
	if c == nil {
		return CallReport{}, false
	}
	return c.report(), true
}

func (c *call) report() CallReport {
	c.mu.Lock()
	ps := make([]*Participant, 0, len(c.participants))
	for _, p := range c.participants {
		ps = append(ps, p)
	}
	tracks := make([]*forwardTrack, 0, len(c.tracks))
	for _, ft := range c.tracks {
		tracks = append(tracks, ft)
	}
	c.mu.Unlock()
	sort.Slice(ps, func(i, j int) bool { return ps[i].joined.Before(ps[j].joined) })
	sort.Slice(tracks, func(i, j int) bool { return tracks[i].id < tracks[j].id })
	rep := CallReport{Channel: c.channel, CallID: c.id, Started: c.started, Participants: make([]ParticipantReport, 0, len(ps))}
	for _, p := range ps {
		pr := ParticipantReport{ID: p.id, Account: p.account, Joined: p.joined, ICE: p.pc.ICEConnectionState().String(),
			DTLS: p.pc.SCTP().Transport().State().String(), PC: p.pc.ConnectionState().String(),
			Signal: p.pc.SignalingState().String(), Tracks: []TrackReport{}}
		for _, ft := range tracks {
			if ft.pub == p {
				pr.Tracks = append(pr.Tracks, ft.report())
			}
		}
		p.subMu.Lock()
		pr.Receives = len(p.subs)
		p.subMu.Unlock()
		rep.Participants = append(rep.Participants, pr)
	}
	return rep
}

func (ft *forwardTrack) report() TrackReport {
	tr := TrackReport{ID: ft.id, Kind: ft.kind.String(), Codec: ft.codec, SSRC: ft.ssrc,
		PacketsReceived: ft.packetsIn.Load(), BytesReceived: ft.bytesIn.Load(),
		PacketsForwarded: ft.packetsOut.Load(), BytesForwarded: ft.bytesOut.Load(),
		Subscribers: int(ft.bound.Load())}
	if exp := ft.expected.Load(); exp > tr.PacketsReceived {
		tr.PacketsLost = exp - tr.PacketsReceived
		tr.LossRatio = float64(tr.PacketsLost) / float64(exp)
	}
	if ns := ft.lastPacket.Load(); ns > 0 {
		tr.LastPacket = time.Unix(0, ns)
	}
	ft.kfMu.Lock()
	tr.KeyframeRequests, tr.LastKeyframeRequest = ft.kfRequests, ft.lastKF
	ft.kfMu.Unlock()
	return tr
}
