package irc

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/palaver-chat/palaver/federation/eventstore"
	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// A connection's plain messages are pipelined: the read loop checks and signs a PRIVMSG, NOTICE or
// TAGMSG, hands it to the connection's pipeline and reads the next line while the message is being
// stored. The pipeline's worker stores everything queued in one Append (so the event store keeps
// the connection's send order), then, in command order, delivers each stored message, echoes it
// and sends the command's replies (or the FAIL of a message that could not be stored). Nothing is
// delivered or echoed before it is durably stored.
//
// Every other command, and a message that edits, deletes or reacts, waits for the pipeline to be
// empty before it runs, so a state change never overtakes a message sent before it and a client's
// lines keep the order of its commands.

// maxInFlight bounds a connection's messages between the read loop and their delivery; beyond it
// the read loop waits.
const maxInFlight = 32

// sendStep is the part of a message command that follows the durable store.
type sendStep struct {
	rec     *eventstore.Message // stored first; nil when the message is not stored
	failCmd string              // the command named by a FAIL when the store refuses it
	deliver func()              // delivers and echoes; runs only after rec is stored
}

// queuedCommand is a command whose replies wait for the connection's earlier messages.
type queuedCommand struct {
	rb   *respBuf
	step *sendStep // nil for a command that only has replies
}

// pipeline is one connection's queue of commands in flight. Its worker goroutine exists only
// while the queue is not empty.
type pipeline struct {
	c *client
	// lock tier 9 (leaf): commands are stored and delivered without it
	mu       sync.Mutex
	changed  sync.Cond // signalled whenever inFlight drops
	queue    []queuedCommand
	inFlight int // queued plus being completed by the worker
	running  bool
}

func (p *pipeline) init(c *client) {
	p.c = c
	p.changed.L = &p.mu
}

// submit queues a command after the ones in flight, waiting while maxInFlight are.
func (p *pipeline) submit(qc queuedCommand) {
	p.mu.Lock()
	for p.inFlight >= maxInFlight {
		p.changed.Wait()
	}
	p.queue = append(p.queue, qc)
	p.inFlight++
	if !p.running {
		p.running = true
		go p.run()
	}
	p.mu.Unlock()
}

// wait returns once every queued command has been completed.
func (p *pipeline) wait() {
	p.mu.Lock()
	for p.inFlight > 0 {
		p.changed.Wait()
	}
	p.mu.Unlock()
}

// idle reports whether nothing is in flight.
func (p *pipeline) idle() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inFlight == 0
}

func (p *pipeline) run() {
	for {
		p.mu.Lock()
		batch := p.queue
		if len(batch) == 0 {
			p.running = false
			p.mu.Unlock()
			return
		}
		p.queue = nil
		p.mu.Unlock()
		p.complete(batch)
		p.mu.Lock()
		p.inFlight -= len(batch)
		p.changed.Broadcast()
		p.mu.Unlock()
	}
}

// complete runs completeQueued; a panic there closes the connection (recover.go), and the batch
// counts as completed so that the connection's end does not wait for it.
func (p *pipeline) complete(batch []queuedCommand) {
	defer func() { p.c.recovered(recover(), "pipeline") }()
	p.c.completeQueued(batch)
}

// completeQueued stores the batch's messages in one Append, then completes each command in order.
func (c *client) completeQueued(batch []queuedCommand) {
	var recs []*eventstore.Message
	for _, qc := range batch {
		if qc.step != nil && qc.step.rec != nil {
			recs = append(recs, qc.step.rec)
		}
	}
	errs := c.appendAll(recs)
	i := 0
	for _, qc := range batch {
		if st := qc.step; st != nil {
			var err error
			if st.rec != nil {
				err = errs[i]
				i++
			}
			if c.afterStore(qc.rb, st, err) {
				st.deliver()
			}
		}
		c.rbMu.Lock()
		qc.rb.flush()
		c.rbMu.Unlock()
	}
}

// appendAll stores recs in order in one call and returns each message's own outcome: nil, an
// error wrapping eventstore.ErrDuplicate (the store leaves a duplicate's Seq at 0), or the call's
// error for all of them.
func (c *client) appendAll(recs []*eventstore.Message) []error {
	errs := make([]error, len(recs))
	if len(recs) == 0 {
		return errs
	}
	ctx, cancel := context.WithTimeout(c.s.ctx, 10*time.Second)
	defer cancel()
	err := c.s.history.Append(ctx, recs...)
	switch {
	case err == nil:
	case errors.Is(err, eventstore.ErrDuplicate):
		for i, r := range recs {
			if r.Seq == 0 {
				errs[i] = err
			}
		}
	case errors.Is(err, eventstore.ErrInvalidArgument) && len(recs) > 1:
		// Validation fails the whole call before anything is written: store each alone so one
		// bad message fails alone.
		for i, r := range recs {
			errs[i] = c.s.history.Append(ctx, r)
		}
	default:
		for i := range errs {
			errs[i] = err
		}
	}
	return errs
}

// completeNow stores a message and delivers it on the calling goroutine (a command that is not
// pipelined).
func (c *client) completeNow(rb *respBuf, st *sendStep) {
	var err error
	if st.rec != nil {
		err = c.appendAll([]*eventstore.Message{st.rec})[0]
	}
	if c.afterStore(rb, st, err) {
		st.deliver()
	}
}

// afterStore answers a store's outcome: it adds the FAIL of a message that was not stored, or
// counts and publishes a stored one. It reports whether the message may be delivered.
func (c *client) afterStore(rb *respBuf, st *sendStep, err error) bool {
	if st.rec == nil {
		return true
	}
	if err != nil {
		if errors.Is(err, eventstore.ErrDuplicate) {
			rb.add(c.failMsg(st.failCmd, "EVENTID_IN_USE", "That event id is already in use"))
			return false
		}
		c.s.log.Error("store message", "msgid", st.rec.MsgID, "err", err)
		rb.add(c.failMsg(st.rec.Command, "TEMPORARILY_UNAVAILABLE", "The message could not be stored; it was not delivered", st.rec.Venue))
		return false
	}
	if m := c.s.cfg.Metrics; m != nil {
		m.Messages.Inc()
	}
	c.s.publishMessage(*st.rec)
	return true
}

// pipelinable reports whether a command may run while the connection's earlier messages are still
// being stored: a plain PRIVMSG, NOTICE or TAGMSG to one target that neither edits, deletes nor
// reacts, from a registered client of a server with an event store.
func (c *client) pipelinable(m ircmsg.Message) bool {
	if c.s.history == nil || !c.registered.Load() {
		return false
	}
	switch m.Command {
	case "PRIVMSG", "NOTICE", "TAGMSG":
	default:
		return false
	}
	if len(m.Params) == 0 || strings.IndexByte(m.Params[0], ',') >= 0 {
		return false
	}
	if mu := mutationOf(m.Command, m.Tags); mu.editOf != "" || mu.deleteOf != "" {
		return false
	}
	if m.Command == "TAGMSG" {
		for _, t := range []string{"+react", "+draft/react", "+freeq.at/unreact"} {
			if _, ok := m.Tags[t]; ok {
				return false
			}
		}
	}
	return true
}
