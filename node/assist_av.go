package node

import (
	"context"
	"slices"

	"github.com/palaver-chat/palaver/gateway/assist"
	"github.com/palaver-chat/palaver/raft/fsm"
	fsmav "github.com/palaver-chat/palaver/raft/fsm/av"
)

// assistAV compares a call's roster (replicated state) with the wire state of the forwarding unit
// when this node hosts the call, for diagnose_av_session.
type assistAV struct {
	node    string
	machine *fsm.Machine
	surface *avSurface
}

func (a assistAV) InspectAV(_ context.Context, channel string) (assist.AVReport, bool, string) {
	surface := a.surface
	if !surface.gateway.Running() {
		return assist.AVReport{}, false, "AV is not running on node " + a.node
	}
	var call fsmav.AVCall
	var ok bool
	a.machine.Read(func(st *fsm.State) { call, ok = fsmav.Of(st).Active(channel) })
	if !ok {
		return assist.AVReport{}, false, "the roster has no active call in " + channel
	}
	r := assist.AVReport{SessionID: call.ID, Host: call.Host}
	byDID := map[string]int{}
	for _, p := range call.Participants {
		if p.LeftAt != 0 {
			continue
		}
		byDID[p.DID] = len(r.Participants)
		r.Participants = append(r.Participants, assist.AVParticipant{Nick: p.Nick, InRoster: true})
	}
	if call.Host == a.node && surface.sfu != nil {
		r.WireKnown = true
		if wire, found := surface.sfu.Inspect(channel); found && wire.CallID == call.ID {
			for _, w := range wire.Participants {
				i, inRoster := byDID[w.Account]
				if !inRoster {
					i = len(r.Participants)
					r.Participants = append(r.Participants, assist.AVParticipant{Nick: w.Account})
				}
				p := &r.Participants[i]
				p.OnWire, p.ICE, p.DTLS, p.Tracks = true, w.ICE, w.DTLS, len(w.Tracks)
				for _, t := range w.Tracks {
					p.PacketsForwarded += t.PacketsForwarded
					p.BytesForwarded += t.BytesForwarded
					p.LossRatio = max(p.LossRatio, t.LossRatio)
					if t.LastKeyframeRequest.After(p.LastKeyframeRequest) {
						p.LastKeyframeRequest = t.LastKeyframeRequest
					}
				}
			}
		}
		for _, p := range r.Participants {
			switch {
			case p.InRoster && !p.OnWire:
				r.Problems = appendOnce(r.Problems, "MISSING_MGR_SLOT")
			case p.OnWire && !p.InRoster:
				r.Problems = appendOnce(r.Problems, "PHANTOM_MGR_SLOT")
			}
		}
	}
	if len(byDID) == 0 {
		r.Problems = appendOnce(r.Problems, "EMPTY_SESSION")
	}
	r.Healthy = len(r.Problems) == 0
	return r, true, ""
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
