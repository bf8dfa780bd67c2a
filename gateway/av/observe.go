package av

import (
	"crypto/sha256"
	"encoding/binary"
	"net/url"
	"strconv"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/raft/fsm"
	fsmav "github.com/palaver-chat/palaver/raft/fsm/av"
)

// Tags of the server's call TAGMSGs.
const (
	TagState        = "+freeq.at/av-state" // started | joined | left | ended
	TagID           = "+freeq.at/av-id"
	TagActor        = "+freeq.at/av-actor"
	TagParticipants = "+freeq.at/av-participants"
	TagReason       = "+freeq.at/av-reason"
)

// Observe reads applied state changes, in log order, off Raft's apply path; it never blocks on
// the network. It announces call changes to this node's channel members, and on the hosting
// node it keeps the forwarding unit within the roster: an account that left the channel, was
// kicked, quit or was banned is disconnected at once and its leave proposed; an account the
// roster dropped is disconnected; an ended call is torn down.
func (g *Gateway) Observe(events []fsm.Event) {
	var recheck map[string]bool
	mark := func(channels ...string) {
		if recheck == nil {
			recheck = map[string]bool{}
		}
		for _, ch := range channels {
			recheck[ch] = true
		}
	}
	for i := range events {
		e := &events[i]
		switch e.Kind {
		case fsmav.EvAVStarted, fsmav.EvAVJoined, fsmav.EvAVLeft, fsmav.EvAVEnded:
			g.announce(e)
		}
		if g.cfg.SFU == nil {
			continue
		}
		switch e.Kind {
		case fsmav.EvAVEnded:
			channel, id, reason := e.Channel, e.MsgID, e.Text
			g.background(func() { g.cfg.SFU.End(channel, id, "call ended: "+reason) })
		case fsmav.EvAVLeft:
			channel, did, reason := e.Channel, e.Actor.DID, e.Text
			g.background(func() { g.cfg.SFU.Kick(channel, did, reason) })
		case fsm.EvPart, fsm.EvKick:
			mark(e.Channel)
		case fsm.EvQuit, fsm.EvAccount:
			mark(e.Channels...)
		case fsm.EvMode:
			for _, m := range e.Modes {
				if m.Add && m.Mode == "b" {
					mark(e.Channel)
				}
			}
		}
	}
	for ch := range recheck {
		g.recheck(ch)
	}
}

// recheck disconnects the participants of the channel's call hosted here who may no longer
// take part, and proposes their leave.
func (g *Gateway) recheck(channel string) {
	type gone struct{ did, reason string }
	var out []gone
	var callID string
	g.cfg.State.Read(func(st *fsm.State) {
		call, ok := fsmav.Of(st).Active(channel)
		if !ok || call.Host != g.cfg.Node {
			return
		}
		callID = call.ID
		for _, p := range call.Participants {
			if p.LeftAt != 0 {
				continue
			}
			switch fsmav.Of(st).Eligible(channel, p.DID) {
			case fsm.OK:
			case fsm.ErrBanned:
				out = append(out, gone{p.DID, "banned from the channel"})
			default:
				out = append(out, gone{p.DID, "left the channel"})
			}
		}
	})
	for _, x := range out {
		did, reason := x.did, x.reason
		g.background(func() { g.cfg.SFU.Kick(channel, did, reason) })
		g.propose(fsmav.AVLeave{CallID: callID, DID: did, Reason: reason})
	}
}

// background runs f on a goroutine of its own (closing peer connections takes a while), which
// Close waits for.
func (g *Gateway) background(f func()) {
	if !g.track() {
		return
	}
	go func() {
		defer g.wg.Done()
		f()
	}()
}

// announce sends the +freeq.at/av-state TAGMSG of a call event to this node's members of the
// channel; started and joined also say where to connect (TagHost, TagTokenURL). Every node announces to its own members; the msgid is derived from the log entry, so
// it is the same on every node.
func (g *Gateway) announce(e *fsm.Event) {
	if g.cfg.Announce == nil {
		return
	}
	state := map[fsm.EventKind]string{fsmav.EvAVStarted: "started", fsmav.EvAVJoined: "joined", fsmav.EvAVLeft: "left", fsmav.EvAVEnded: "ended"}[e.Kind]
	tags := map[string]string{TagState: state, TagID: e.MsgID}
	if e.Actor.Nick != "" {
		tags[TagActor] = e.Actor.Nick
	}
	if e.Text != "" {
		tags[TagReason] = e.Text
	}
	live, host := 0, ""
	g.cfg.State.Read(func(st *fsm.State) {
		if call, ok := fsmav.Of(st).Call(e.MsgID); ok && call.Live() {
			live, host = call.LiveParticipants(), call.Host
		}
	})
	tags[TagParticipants] = strconv.Itoa(live)
	if host != "" && (e.Kind == fsmav.EvAVStarted || e.Kind == fsmav.EvAVJoined) {
		// Where to connect: any node's token route names the host's signalling URL; this
		// node's own is given to its members.
		tags[TagHost] = host
		tags[TagTokenURL] = g.cfg.BaseURL + "/api/v1/av/sessions/" + url.PathEscape(e.MsgID) + "/token"
	}
	g.cfg.Announce(e.Channel, tags, time.UnixMilli(e.Time), eventMsgID(e))
}

// eventMsgID derives a ULID from the entry's time and index and the event.
func eventMsgID(e *fsm.Event) string {
	var seed [16]byte
	binary.BigEndian.PutUint64(seed[:8], e.Index)
	binary.BigEndian.PutUint64(seed[8:], uint64(e.Kind))
	h := sha256.Sum256(append(seed[:], e.Actor.DID+"\x00"+e.MsgID...))
	var id ulid.ULID
	_ = id.SetTime(uint64(max(e.Time, 0)))
	_ = id.SetEntropy(h[:10])
	return id.String()
}

// Resync reconciles the forwarding unit with the roster after events were missed: calls that
// ended are torn down, and every live call hosted here is checked against its channel.
func (g *Gateway) Resync() {
	if g.cfg.SFU == nil {
		return
	}
	live := map[string]string{} // channel → live call hosted here
	g.cfg.State.Read(func(st *fsm.State) {
		for _, call := range fsmav.Of(st).Live() {
			if call.Host == g.cfg.Node {
				live[call.Channel] = call.ID
			}
		}
	})
	for _, ch := range g.cfg.SFU.Channels() {
		if rep, ok := g.cfg.SFU.Inspect(ch); ok && live[ch] != rep.CallID {
			channel, id := ch, rep.CallID
			g.background(func() { g.cfg.SFU.End(channel, id, "call ended") })
		}
	}
	for ch := range live {
		g.recheck(ch)
	}
}
