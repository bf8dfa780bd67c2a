package node

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/gateway/coord"
	"github.com/palaver-chat/palaver/gateway/irc"
	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/stream"
)

// mountCoord builds the coordination surface (ACT actions, tasks, manifests, spawned agents,
// capabilities, approvals, actor records, the audit timeline): its REST routes, the agent
// commands (PROVENANCE, AGENT, PRESENCE, HEARTBEAT), the check of coordination TAGMSGs before
// they are relayed, their filing once relayed (by the node whose client sent them), the signed
// confirm receipts, and the actor-class tag on JOIN. Its models are replicated state, so every
// node answers the same; receipts are signed with this node's server key, which never leaves it.
func (n *Node) mountCoord(context.Context) error {
	n.coord = coord.New(coord.Config{
		Options: n.cfg.Coord, State: n.machine, Proposer: n.prop, ServerDID: n.ServerDID(), ServerKey: n.serverKey,
		NewID: func() string { return ulid.Make().String() }, Logger: n.log.With("component", "coord"),
	})
	if err := n.coord.Mount(n.rest); err != nil {
		return fmt.Errorf("coordination: %w", err)
	}
	c := coordEdge{svc: n.coord, irc: n.irc, log: n.log.With("component", "coord")}
	for _, v := range []struct {
		verb string
		min  int
		fn   irc.VerbFunc
	}{{"PROVENANCE", 1, c.provenance}, {"AGENT", 1, c.agent}, {"PRESENCE", 1, c.presence}, {"HEARTBEAT", 0, c.heartbeat}} {
		if err := n.irc.RegisterVerb(v.verb, v.min, v.fn); err != nil {
			return fmt.Errorf("coordination: %w", err)
		}
	}
	if err := n.irc.AddMessageCheck("coordination", c.check); err != nil {
		return fmt.Errorf("coordination: %w", err)
	}
	if err := n.irc.AddJoinTags(c.joinTags); err != nil {
		return fmt.Errorf("coordination: %w", err)
	}
	if err := n.streams.Stored.Subscribe("coordination", stream.DropAndResync, c.file, stream.Local); err != nil {
		return fmt.Errorf("coordination: %w", err)
	}
	if every := n.cfg.Coord.ActSweepEvery; every > 0 {
		n.raft.OnLeadership(func(ctx context.Context) {
			runEvery(ctx, every, func() {
				if expired := n.coord.Sweep(ctx); expired > 0 {
					c.log.Info("expired ACT offers past their deadline", "count", expired)
				}
			})
		})
	}
	return nil
}

// coordEdge adapts the coordination service to the IRC seams.
type coordEdge struct {
	svc *coord.Service
	irc *irc.Server
	log *slog.Logger
}

func caller(v *irc.VerbContext) coord.Caller {
	return coord.Caller{Session: v.SessionID(), DID: v.DID(), Nick: v.Nick()}
}

// answer sends a command's outcome: a NOTICE with the text (when any), or the FAIL.
func answer(v *irc.VerbContext, note string, f *coord.Fail) {
	if f != nil {
		v.Fail(f.Command, f.Code, f.Text)
		return
	}
	if note != "" {
		v.Reply(ircmsg.Message{Command: "NOTICE", Params: []string{v.Nick(), note}})
	}
}

func (c coordEdge) provenance(v *irc.VerbContext) {
	note, f := c.svc.Provenance(v.Context(), caller(v), v.Msg.Param(0))
	answer(v, note, f)
}

func (c coordEdge) agent(v *irc.VerbContext) {
	note, f := c.svc.Agent(v.Context(), caller(v), v.Msg.Params)
	answer(v, note, f)
}

func (c coordEdge) presence(v *irc.VerbContext) {
	note, f := c.svc.Presence(v.Context(), caller(v), strings.Join(v.Msg.Params, " "))
	answer(v, note, f)
}

func (c coordEdge) heartbeat(v *irc.VerbContext) {
	note, f := c.svc.Heartbeat(v.Context(), caller(v), strings.Join(v.Msg.Params, " "))
	answer(v, note, f)
}

// check refuses a coordination TAGMSG that could not be filed, before it is relayed.
func (c coordEdge) check(m irc.OutgoingMessage) *irc.Refusal {
	if m.Command != "TAGMSG" || !coord.IsCoordination(m.Tags) {
		return nil
	}
	if f := c.svc.Check(coord.Tagmsg{SenderDID: m.DID, Venue: m.Channel, Tags: m.Tags}); f != nil {
		return &irc.Refusal{Code: f.Code, Text: f.Text}
	}
	return nil
}

// file files a coordination TAGMSG this node's client sent, once relayed, and sends the
// server's confirm receipt to the channel.
func (c coordEdge) file(it stream.Item) {
	if it.Gap {
		c.log.Warn("coordination events were dropped before they were filed (queue overflow)")
		return
	}
	m := it.Message
	if m == nil || m.Command != "TAGMSG" || !coord.IsCoordination(m.Tags) || m.Tags["+freeq.at/act-verb"] == "confirm" {
		return // not a coordination event, or the server's own receipt
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	receipt, f := c.svc.File(ctx, coord.Tagmsg{SenderDID: m.SenderDID, Venue: m.Venue, Tags: m.Tags, EventID: m.MsgID})
	if f != nil {
		// Judged fit before it was relayed: another event won a race, or the log is unreachable.
		c.log.Warn("coordination event not filed", "msgid", m.MsgID, "venue", m.Venue, "code", f.Code)
		return
	}
	if receipt == nil || !strings.HasPrefix(receipt.Venue, "#") && !strings.HasPrefix(receipt.Venue, "&") {
		return
	}
	// The receipt filed in the state is the one sent: its id becomes the msgid, its signature stays.
	tags := make(map[string]string, len(receipt.Tags))
	for k, v := range receipt.Tags {
		if k != chat.TagSig && k != chat.TagEventID {
			tags[k] = v
		}
	}
	msg := irc.ServerMessage{Channel: receipt.Venue, Command: "TAGMSG", Tags: tags,
		EventID: receipt.Tags[chat.TagEventID], Signature: receipt.Tags[chat.TagSig]}
	if _, err := c.irc.SendServerMessage(ctx, msg); err != nil {
		c.log.Warn("confirm receipt not sent", "msgid", m.MsgID, "err", err)
	}
}

// joinTags adds +freeq.at/actor-class to the JOIN of an actor whose class is known.
func (c coordEdge) joinTags(_, _, did string) map[string]string {
	if class := c.svc.ActorClass(did); class != "" {
		return map[string]string{"+freeq.at/actor-class": class}
	}
	return nil
}
