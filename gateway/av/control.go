package av

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/raft/fsm"
	fsmav "github.com/palaver-chat/palaver/raft/fsm/av"
)

// Tags a channel member sends on a TAGMSG to the channel to act on its call (freeq's action
// tags: the value is ignored). One action per message.
const (
	TagStart = "+freeq.at/av-start" // start a call, hosted by the node the sender is connected to
	TagJoin  = "+freeq.at/av-join"  // join the channel's live call's roster
	TagLeave = "+freeq.at/av-leave" // leave it
	TagEnd   = "+freeq.at/av-end"   // end it for everyone: channel and server operators only
	// TagID, sent with an action, names the call it is for; it must be the channel's live call.
	// TagReason, with av-leave or av-end, says why.
)

// Tags only the server sets on its call TAGMSGs and notices; a client's message carrying one is
// refused, so that no member can pass for the server.
const (
	// TagHost names the node that hosts the call (on started and joined).
	TagHost = "+freeq.at/av-host"
	// TagTokenURL is the token route of the call on the node that rendered the TAGMSG (on
	// started and joined): GET it with the bearer token for the signalling URL.
	TagTokenURL = "+freeq.at/av-token-url"
	// TagError is the code of a call action that Raft refused after it was accepted, on a NOTICE
	// to the sender: start-collision (TagID names the winning call) or the FAIL code otherwise.
	TagError = "+freeq.at/av-error"
)

var (
	actionTags     = []string{TagStart, TagJoin, TagLeave, TagEnd}
	serverOnlyTags = []string{TagState, TagParticipants, TagActor, TagHost, TagTokenURL, TagError}
)

// ChannelMessage is a PRIVMSG, NOTICE or TAGMSG a client sends to a channel, as CheckMessage
// sees it: after the channel's modes allowed it, before it is relayed.
type ChannelMessage struct {
	Session string
	DID     string // "" for a guest
	Nick    string
	Command string
	Channel string // folded
	Status  string // "@", "%" or "+" for a status message
	Tags    map[string]string
}

// Refusal is CheckMessage's answer to a message it refuses: the sender gets
// FAIL <command> <Code> <channel> :<Text> and nothing changes.
type Refusal struct{ Code, Text string }

// FAIL codes of call actions.
const (
	FailInvalidTag      = "INVALID_TAG"
	FailUnavailable     = "AV_UNAVAILABLE"
	FailAccountRequired = "ACCOUNT_REQUIRED"
	FailNotOnChannel    = "NOT_ON_CHANNEL"
	FailBanned          = "BANNED"
	FailActive          = "AV_ACTIVE"
	FailNoCall          = "AV_NO_CALL"
	FailFull            = "AV_FULL"
	FailAlreadyIn       = "AV_ALREADY_JOINED"
	FailNotInCall       = "AV_NOT_IN_CALL"
	FailNotOperator     = "AV_NOT_OPERATOR"
)

// CheckMessage is the call control of the IRC edge, run on every channel message before it is
// relayed. A message without +freeq.at/av-* tags passes untouched. A TAGMSG with an action tag
// is checked against the replicated state with the rules Raft applies (the same as the REST
// routes'); a refused one is answered with a FAIL and changes nothing; an accepted one is relayed
// like any TAGMSG and its change is proposed through Raft, after which every member on every
// node sees the server's +freeq.at/av-state TAGMSG. It never blocks: the proposal runs on the
// surface's worker.
func (g *Gateway) CheckMessage(m ChannelMessage) *Refusal {
	var action string
	for k := range m.Tags {
		if !strings.HasPrefix(k, "+freeq.at/av-") {
			continue
		}
		for _, t := range serverOnlyTags {
			if k == t {
				return &Refusal{FailInvalidTag, t + " is set by the server only"}
			}
		}
		for _, t := range actionTags {
			if k != t {
				continue
			}
			if action != "" {
				return &Refusal{FailInvalidTag, "One call action per message: " + action + " and " + t}
			}
			action = t
		}
	}
	if action == "" {
		return nil
	}
	if m.Command != "TAGMSG" || m.Status != "" {
		return &Refusal{FailInvalidTag, "Call actions (" + action + ") travel on a TAGMSG to the whole channel"}
	}
	if g.cfg.SFU == nil && action == TagStart {
		return &Refusal{FailUnavailable, "Audio and video are not available on this node: " + g.unavailable()}
	}
	reason := m.Tags[TagReason]
	if why := validReason(reason); why != "" {
		return &Refusal{FailInvalidTag, "Not a valid " + TagReason + ": " + why}
	}
	var cmd fsm.Command
	var refused *Refusal
	g.cfg.State.Read(func(st *fsm.State) { cmd, refused = g.control(st, m, action, reason) })
	if refused != nil {
		return refused
	}
	g.enqueue(action, func(ctx context.Context) { g.proposeAction(ctx, m, cmd) })
	return nil
}

// control checks an action against the state and returns the command to propose, or the
// refusal.
func (g *Gateway) control(st *fsm.State, m ChannelMessage, action, reason string) (fsm.Command, *Refusal) {
	call, live := fsmav.Of(st).Active(m.Channel)
	if id := m.Tags[TagID]; action != TagStart && id != "" && (!live || id != call.ID) {
		return nil, &Refusal{FailNoCall, "The call " + id + " is not the live call of " + m.Channel}
	}
	if action == TagEnd {
		switch {
		case !live:
			return nil, &Refusal{FailNoCall, m.Channel + " has no call"}
		case !fsmav.Of(st).MayEnd(m.Channel, m.DID, m.Session) && !g.serverOper(m.DID):
			return nil, &Refusal{FailNotOperator, "Only channel operators of " + m.Channel + " and server operators end its calls"}
		}
		return fsmav.AVOperatorEnd{CallID: call.ID, DID: m.DID, Session: m.Session, ServerOper: g.serverOper(m.DID), Reason: reason}, nil
	}
	if action == TagLeave {
		if !live || !inCall(call, m.DID) {
			return nil, &Refusal{FailNotInCall, "You are not in a call in " + m.Channel}
		}
		if reason == "" {
			reason = "left the call"
		}
		return fsmav.AVLeave{CallID: call.ID, DID: m.DID, Reason: reason}, nil
	}
	if r := controlRefusal(fsmav.Of(st).Eligible(m.Channel, m.DID), m.Channel); r != nil {
		return nil, r
	}
	if action == TagStart {
		if live {
			return nil, &Refusal{FailActive, m.Channel + " already has a call: " + call.ID + " (hosted by " + call.Host + "); join it"}
		}
		return fsmav.AVStart{CallID: ulid.Make().String(), Channel: m.Channel, Node: g.cfg.Node, DID: m.DID}, nil
	}
	switch {
	case !live:
		return nil, &Refusal{FailNoCall, m.Channel + " has no call; start one with " + TagStart}
	case inCall(call, m.DID):
		return nil, &Refusal{FailAlreadyIn, "You are in the call " + call.ID + " already"}
	case call.LiveParticipants() >= fsmav.MaxAVParticipants:
		return nil, &Refusal{FailFull, fmt.Sprintf("The call is full (%d participants)", fsmav.MaxAVParticipants)}
	}
	return fsmav.AVJoin{CallID: call.ID, DID: m.DID}, nil
}

func inCall(call fsmav.AVCall, did string) bool {
	for _, p := range call.Participants {
		if did != "" && p.DID == did && p.LeftAt == 0 {
			return true
		}
	}
	return false
}

// controlRefusal maps a refusal of the roster to a FAIL; nil for OK.
func controlRefusal(code fsm.Code, channel string) *Refusal {
	switch code {
	case fsm.OK, fsm.NoChange:
		return nil
	case fsmav.ErrAVNeedsAccount:
		return &Refusal{FailAccountRequired, "Only authenticated users take part in calls"}
	case fsm.ErrNoSuchChannel, fsm.ErrNotOnChannel:
		return &Refusal{FailNotOnChannel, "Only members of " + channel + " take part in its calls"}
	case fsm.ErrBanned:
		return &Refusal{FailBanned, "You are banned from " + channel}
	case fsmav.ErrAVActive:
		return &Refusal{FailActive, channel + " already has a call"}
	case fsmav.ErrAVNoCall:
		return &Refusal{FailNoCall, channel + " has no call"}
	case fsmav.ErrAVFull:
		return &Refusal{FailFull, fmt.Sprintf("The call is full (%d participants)", fsmav.MaxAVParticipants)}
	case fsmav.ErrAVNotOperator:
		return &Refusal{FailNotOperator, "Only channel operators of " + channel + " and server operators end its calls"}
	default:
		return &Refusal{"REFUSED", "Refused: " + code.String()}
	}
}

// proposeAction proposes an accepted call action; when Raft refuses it (the state changed since
// the check: another call started first, the sender left the channel) the sender is told with a
// NOTICE carrying TagError.
func (g *Gateway) proposeAction(ctx context.Context, m ChannelMessage, cmd fsm.Command) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := g.cfg.Propose.Propose(ctx, cmd)
	if err != nil {
		g.log.Warn("call action from IRC", "channel", m.Channel, "cmd", fmt.Sprintf("%T", cmd), "err", err)
		g.tell(m, "AV_FAILED", "", "Your call action in "+m.Channel+" could not be carried out now; try again")
		return
	}
	if r := controlRefusal(res.Code, m.Channel); r != nil {
		code, id := r.Code, ""
		if res.Code == fsmav.ErrAVActive {
			code = "start-collision"
			g.cfg.State.Read(func(st *fsm.State) {
				if call, ok := fsmav.Of(st).Active(m.Channel); ok {
					id = call.ID
				}
			})
		}
		g.tell(m, code, id, "Your call action in "+m.Channel+" was refused: "+r.Text)
	}
}

// tell sends the sender a NOTICE about its refused action (authenticated senders only: a guest
// takes no part in calls).
func (g *Gateway) tell(m ChannelMessage, code, id, text string) {
	if g.cfg.Tell == nil || m.DID == "" {
		return
	}
	tags := map[string]string{TagError: code, TagReason: text}
	if id != "" {
		tags[TagID] = id
	}
	g.cfg.Tell(m.DID, text, tags)
}
