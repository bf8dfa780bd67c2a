package exchange

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/limits"
)

// Reactions travel like deletes: the node where a react or unreact was made files it in its
// reaction log (eventstore.FileReaction); its streams send that log, and peers that missed it pull
// it, with a cursor of their own ("in:reactions:<origin>"), filing each event in turn. A reaction
// to a message a peer has not stored yet waits: the walk stops before it and the cursor stays,
// until the message arrives from its own origin. Filing is idempotent (a repeated event msgid is
// ErrDuplicate), and only a newly applied event is delivered to local members, so a reaction
// streamed and then pulled is delivered once.
//
// Other channel TAGMSGs (typing notifications) are ephemeral: they are pushed, best effort, and
// delivered live on arrival; they are never stored nor pulled.

// validReaction checks what a receiver relies on before filing a reaction.
func validReaction(r eventstore.ReactionEvent) error {
	switch {
	case r.Seq <= 0 || r.At.UnixMilli() <= 0:
		return errors.New("bad sequence or time")
	case r.EventID == "" || len(r.EventID) > limits.MsgIDBytes || r.Root == "" || len(r.Root) > limits.MsgIDBytes:
		return errors.New("bad msgid")
	case !isChannel(r.Venue):
		return errors.New("bad venue")
	case r.Reactor == "" || len(r.Reactor) > limits.NameBytes || len(r.ReactorNick) > limits.NameBytes || len(r.Sender) > limits.NameBytes ||
		len(r.SenderDID) > limits.NameBytes:
		return errors.New("bad reactor")
	case r.Emoji == "" || len(r.Emoji) > eventstore.MaxEmojiBytes:
		return errors.New("bad emoji")
	}
	return checkTags(r.Tags)
}

func isChannel(venue string) bool {
	return venue != "" && len(venue) <= 512 && (strings.HasPrefix(venue, "#") || strings.HasPrefix(venue, "&"))
}

// validateEphemeral checks an ephemeral TAGMSG, status message or WALLOPS before it is delivered.
func validateEphemeral(e Event) error {
	if e.Command == "WALLOPS" {
		return validateWallops(e)
	}
	switch {
	case e.Status != "" && e.Status != "@" && e.Status != "%" && e.Status != "+":
		return errors.New("bad status")
	case e.Command != "TAGMSG" && (e.Status == "" || (e.Command != "PRIVMSG" && e.Command != "NOTICE")):
		return errors.New("only a TAGMSG or a status message is ephemeral")
	case e.MsgID == "" || len(e.MsgID) > 64:
		return errors.New("bad msgid")
	case !isChannel(e.Venue):
		return errors.New("bad venue")
	case e.TimeMS <= 0:
		return errors.New("bad time")
	case len(e.Sender) > 512 || len(e.SenderNick) > 512 || len(e.Text) > limits.TextBytes || (e.Command == "TAGMSG" && e.Text != ""):
		return errors.New("malformed ephemeral event")
	}
	return nil
}

// validateWallops checks a relayed WALLOPS: an operator's text to every +w user, with no venue.
func validateWallops(e Event) error {
	switch {
	case e.Venue != "" || e.Status != "":
		return errors.New("a WALLOPS has no venue")
	case e.MsgID == "" || len(e.MsgID) > 64:
		return errors.New("bad msgid")
	case e.TimeMS <= 0:
		return errors.New("bad time")
	case e.Text == "" || len(e.Text) > limits.TextBytes || e.Sender == "" || len(e.Sender) > 512 || len(e.SenderNick) > 512:
		return errors.New("malformed WALLOPS")
	}
	return nil
}

// PublishReaction tells every stream that this node filed a reaction (eventstore.FileReaction):
// the streams read it from the reaction log. It never blocks.
func (x *Exchange) PublishReaction(eventstore.ReactionEvent) {
	x.notifyOutboxes(false, false, true)
}

// Relay pushes an ephemeral channel TAGMSG (a typing notification, say), status message or
// WALLOPS to every peer, best effort: it is dropped for a peer whose queue is full, and never stored or pulled.
func (x *Exchange) Relay(m eventstore.Message) {
	ev := eventOf(m)
	ev.OriginSeq = 0
	x.enqueue(ev)
}

// applyReactions has the chat service file an origin's reactions (from its log, streamed or
// pulled) in order and returns the origin seq of the last one filed. A reaction whose root is not
// stored here yet stops the walk, so the cursor stays before it. A malformed reaction, or one an
// acceptance rule refuses, is a dead letter from peer (deadletters.go): one bad row must not hold
// back every reaction after it. Filing is idempotent, and only a newly applied event is
// published, so a reaction streamed and then pulled is delivered once.
func (x *Exchange) applyReactions(ctx context.Context, peer, originName string, rs []eventstore.ReactionEvent) (int64, error) {
	valid := make([]eventstore.ReactionEvent, 0, len(rs))
	at := make([]int, len(rs)) // index in valid, or -1
	var dead []eventstore.DeadLetter
	for i, r := range rs {
		if err := validReaction(r); err != nil {
			dead = append(dead, deadLetterOf(originName, LogReactions, r.Seq, r.EventID, reasonOf(err), err.Error()))
			at[i] = -1
			continue
		}
		at[i] = len(valid)
		r.Origin = originName
		valid = append(valid, r)
	}
	res, err := x.in.Receive(ctx, clusterSource(originName, true), chat.Batch{Reactions: valid})
	var last int64
	record := func() error { return x.recordDeadLetters(ctx, peer, dead) }
	for i, r := range rs {
		if at[i] < 0 {
			last = max(last, r.Seq)
			continue
		}
		switch o := res.Reactions[at[i]]; {
		case o == "":
			if rerr := record(); rerr != nil {
				return 0, rerr
			}
			return last, fmt.Errorf("file reaction %s: %w", r.EventID, err)
		case o == chat.Wait:
			return last, record()
		case refused(o):
			dead = append(dead, deadLetterOf(originName, LogReactions, r.Seq, r.EventID, string(o), "refused by "+string(o)))
		}
		last = r.Seq
	}
	if rerr := record(); rerr != nil {
		return 0, rerr
	}
	return last, err
}

// deliverEphemeral hands pushed ephemeral TAGMSGs and status messages to local members.
func (x *Exchange) deliverEphemeral(originName string, evs []Event) {
	var valid []*eventstore.Message
	for _, e := range evs {
		if err := validateEphemeral(e); err != nil {
			x.cfg.Logger.Debug("dropping a malformed ephemeral event", "origin", originName, "err", err)
			continue
		}
		valid = append(valid, e.message(originName))
	}
	if len(valid) > 0 {
		// Relayed only: nothing is stored, so nothing can fail.
		_, _ = x.in.Receive(x.ctx, clusterSource(originName, false), chat.Batch{Ephemeral: valid})
	}
}
