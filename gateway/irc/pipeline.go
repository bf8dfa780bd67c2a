package irc

import (
	"strings"
	"sync"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node/chat"
)

// A connection's plain messages are pipelined: the read loop has the chat service check and sign a
// PRIVMSG, NOTICE or TAGMSG (Messages.Prepare), hands it to the connection's pipeline and reads
// the next line while the message is being stored. The pipeline's worker commits everything
// queued in one Messages.Commit (one durable commit, so the event store keeps the connection's
// send order), then, in command order, delivers each stored message, echoes it
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
	write   *chat.Write // committed first (stored, published) by the chat service
	deliver func()      // delivers and echoes; runs only after write is committed
	// gather, when set, is deliver for a step committed with others (completeQueued): it adds
	// the message to the batch's fan-out, which sends it with the batch's other messages to the
	// same channel, and echoes.
	gather func(*batchFanOut)
}

// queuedCommand is a command whose replies wait for the connection's earlier messages.
type queuedCommand struct {
	rb   *respBuf
	step *sendStep // nil for a command that only has replies
}

// pipeline is one connection's queue of commands in flight. Its worker (a handler) runs only
// while the queue is not empty.
type pipeline struct {
	c *client
	// lock tier 9 (leaf): commands are stored and delivered without it
	mu       sync.Mutex
	changed  sync.Cond // signalled whenever inFlight drops
	queue    []queuedCommand
	inFlight int // queued plus being completed by the worker
	running  bool
	runFn    func() // run, bound once
}

func (p *pipeline) init(c *client) {
	p.c = c
	p.changed.L = &p.mu
	p.runFn = p.run
}

// submit queues a command after the ones in flight, waiting while maxInFlight are.
func (p *pipeline) submit(qc queuedCommand) {
	p.mu.Lock()
	for p.inFlight >= maxInFlight {
		p.changed.Wait()
	}
	p.queue = append(p.queue, qc)
	p.inFlight++
	start := !p.running
	p.running = true
	p.mu.Unlock()
	if start { // outside p.mu, a leaf lock: the handlers' pool takes its own
		p.c.s.handlers.run(p.runFn)
	}
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

// completeQueued commits the batch's writes in one call (its messages in one durable commit),
// then completes each command in order. Consecutive messages of the batch to one channel reach
// its members through one fan-out (batchFanOut); a write delivered on its own sends what was
// gathered before it first, so that every member gets the messages in the order they were sent.
func (c *client) completeQueued(batch []queuedCommand) {
	var writes []*chat.Write
	var fan *batchFanOut
	if len(batch) > 1 {
		fan = &batchFanOut{sender: c}
	}
	for _, qc := range batch {
		if st := qc.step; st != nil {
			w := st.commitWrite()
			if fan != nil {
				if st.gather != nil {
					w.Deliver = func() { st.gather(fan) }
				} else if deliver := w.Deliver; deliver != nil {
					w.Deliver = func() {
						fan.flush()
						deliver()
					}
				}
				w.AfterDeliver = fan.flush
			}
			writes = append(writes, w)
		}
	}
	refusals := c.s.msgs.Commit(c.s.ctx, writes...)
	i := 0
	for _, qc := range batch {
		if st := qc.step; st != nil {
			c.afterStore(qc.rb, st, refusals[i]) // delivered by Commit unless refused
			i++
		}
		c.rbMu.Lock()
		qc.rb.flush()
		c.rbMu.Unlock()
	}
}

// completeNow commits a write, which Commit delivers, on the calling goroutine (a command that is
// not pipelined).
func (c *client) completeNow(rb *respBuf, st *sendStep) {
	c.afterStore(rb, st, c.s.msgs.Commit(c.s.ctx, st.commitWrite())[0]) // delivered by Commit unless refused
}

// commitWrite is the write to commit, delivered by Commit itself right after the durable commit
// (chat.Write.Deliver), in the order of the writes, so that the chat service knows when a stored
// message reached this node's readers: a reader resuming after a later message (CHATHISTORY
// AFTER msgid=) is then given one delivered after that message.
func (st *sendStep) commitWrite() *chat.Write {
	st.write.Deliver = st.deliver
	return st.write
}

// afterStore answers a commit's outcome: it adds the FAIL of a write that was refused, or counts
// a stored message.
func (c *client) afterStore(rb *respBuf, st *sendStep, r *chat.Refusal) {
	if r != nil {
		c.refused(rb, st.write.Event.Command, r)
		return
	}
	if m := c.s.cfg.Metrics; m != nil && st.write.Kind == chat.Message {
		m.Messages.Inc()
	}
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
	return chat.EditOrDeleteOf(m.Command, m.Tags) == "" && !chat.IsReaction(m.Command, m.Tags)
}
