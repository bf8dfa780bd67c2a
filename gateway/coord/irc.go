package coord

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc"
	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/stream"
)

// PlugIRC puts the coordination surface on the IRC edge, through its seams: the agent commands
// (PROVENANCE, AGENT, PRESENCE, HEARTBEAT) and their NOTICE or FAIL answers, the check of
// coordination TAGMSGs before they are relayed, their filing once relayed (from the Stored
// stream, by the node whose client sent them) with the signed confirm receipt sent to the
// channel, and the actor-class tag on JOIN.
func (s *Service) PlugIRC(edge *irc.Server, stored *stream.Stored, log *slog.Logger) error {
	c := coordEdge{svc: s, irc: edge, log: log}
	for _, v := range []struct {
		verb string
		min  int
		fn   irc.VerbFunc
	}{{"PROVENANCE", 1, c.provenance}, {"AGENT", 1, c.agent}, {"PRESENCE", 1, c.presence}, {"HEARTBEAT", 0, c.heartbeat}} {
		if err := edge.RegisterVerb(v.verb, v.min, v.fn); err != nil {
			return err
		}
	}
	if err := edge.AddMessageCheck("coordination", c.check); err != nil {
		return err
	}
	if err := edge.AddJoinTags(c.joinTags); err != nil {
		return err
	}
	return stored.Subscribe("coordination", stream.DropAndResync, c.file, stream.Local)
}

// coordEdge adapts the service to the IRC seams.
type coordEdge struct {
	svc *Service
	irc *irc.Server
	log *slog.Logger
}

func caller(v *irc.VerbContext) Caller {
	return Caller{Session: v.SessionID(), DID: v.DID(), Nick: v.Nick()}
}

// answer sends a command's outcome: a NOTICE with the text (when any), or the FAIL.
func answer(v *irc.VerbContext, note string, f *Fail) {
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
	if m.Command != "TAGMSG" || !IsCoordination(m.Tags) {
		return nil
	}
	if f := c.svc.Check(Tagmsg{SenderDID: m.DID, Venue: m.Channel, Tags: m.Tags}); f != nil {
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
	if m == nil || m.Command != "TAGMSG" || !IsCoordination(m.Tags) || m.Tags["+freeq.at/act-verb"] == "confirm" {
		return // not a coordination event, or the server's own receipt
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	receipt, f := c.svc.File(ctx, Tagmsg{SenderDID: m.SenderDID, Venue: m.Venue, Tags: m.Tags, EventID: m.MsgID})
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
