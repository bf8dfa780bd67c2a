package load

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// maxSignedBatch bounds how many signed lines a sender writes with one
// system call when several window slots are free at once.
const maxSignedBatch = 16

// streamOptions configure one signing sender's stream of PRIVMSGs.
type streamOptions struct {
	window  int             // messages sent but not yet answered, at most
	stop    <-chan struct{} // closed: send no more (nil: only limit stops)
	limit   int             // messages to send; 0 sends until stop
	timeout time.Duration   // bound on one message's answer and on the final drain
	body    func(seq int) string
	keepIDs bool          // keep the msgids of accepted messages
	counter *atomic.Int64 // counts accepted messages as they come, for progress; may be nil
}

// streamResult is what one signing sender measured.
type streamResult struct {
	sent            int
	accepted        int
	latencies       []time.Duration // send → echo of each accepted message
	rejections      map[string]int  // refused messages by reason: "FAIL <code>" or a numeric
	firstRejections []string        // the first refusals, verbatim
	unanswered      int             // neither echoed nor refused: a timeout or a lost connection
	signTime        time.Duration   // wall time spent minting msgids, building documents and signing
	lastAnswer      time.Time       // when the last echo or refusal arrived
	msgids          []string        // accepted msgids, when streamOptions.keepIDs
	err             error           // what ended the stream early, if anything
}

func (r *streamResult) rejected() int {
	n := 0
	for _, c := range r.rejections {
		n += c
	}
	return n
}

// pendingEcho is a message sent and not yet answered.
type pendingEcho struct {
	msgid, sig string
	sent       time.Time
}

// echoQueue holds the unanswered messages in sending order: the server
// handles one connection's lines in order, so echoes and refusals come
// back in that order too.
type echoQueue struct {
	mu   sync.Mutex
	q    []pendingEcho
	head int
}

func (q *echoQueue) push(recs ...pendingEcho) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head > 0 && q.head == len(q.q) {
		q.q, q.head = q.q[:0], 0
	}
	q.q = append(q.q, recs...)
}

func (q *echoQueue) pop() (pendingEcho, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.q) {
		return pendingEcho{}, false
	}
	p := q.q[q.head]
	q.head++
	return p, true
}

// oldest returns the send time of the oldest unanswered message.
func (q *echoQueue) oldest() (time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.q) {
		return time.Time{}, false
	}
	return q.q[q.head].sent, true
}

func (q *echoQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.q) - q.head
}

// errStalled reports a stream that waited longer than its timeout for an
// answer.
var errStalled = errors.New("load: no answer within the timeout")

// stream sends signed PRIVMSGs to the sender's channel, at most
// opt.window unanswered at a time, until opt.stop closes or opt.limit
// messages are sent, then waits for the answers to all of them: the echo
// (the message was verified, stored and relayed) or a refusal (FAIL
// PRIVMSG, a 4xx numeric). A final PING marks the end: its PONG comes
// after every earlier answer. A watchdog closes the connection when an
// answer is later than opt.timeout; the messages still waiting then count
// as unanswered. On return the connection is open (unless it failed) and
// nobody reads it.
func (s *signingSender) stream(ctx context.Context, opt streamOptions) streamResult {
	var res streamResult
	q := &echoQueue{}
	slots := make(chan struct{}, opt.window)
	drainToken := "drain-" + randomTag(8)
	var drainDeadline atomic.Int64 // unix nanoseconds; 0 while sending
	readerDone := make(chan struct{})
	var answers answerStats
	answers.rejections = map[string]int{}
	var readErr error
	go func() {
		defer close(readerDone)
		readErr = s.readAnswers(ctx, q, slots, drainToken, opt, &answers)
	}()
	watchdogDone := make(chan struct{})
	stalled := atomic.Bool{}
	go func() {
		defer close(watchdogDone)
		s.watchdog(q, opt.timeout, &drainDeadline, readerDone, &stalled)
	}()

	writeErr := s.writeSigned(ctx, opt, q, slots, readerDone, &res)
	drainDeadline.Store(time.Now().Add(opt.timeout).UnixNano())
	if writeErr == nil {
		writeErr = s.conn.writeLines(ctx, "PING :"+drainToken)
	}
	if writeErr != nil {
		s.conn.close() // the reader would wait for answers that cannot come
	}
	<-readerDone
	<-watchdogDone

	res.accepted, res.latencies, res.rejections = answers.accepted, answers.latencies, answers.rejections
	res.firstRejections, res.lastAnswer, res.msgids = answers.firstRejections, answers.lastAnswer, answers.msgids
	if len(res.rejections) == 0 {
		res.rejections = nil
	}
	res.unanswered = q.len()
	switch {
	case stalled.Load():
		res.err = errStalled
	case writeErr != nil:
		res.err = writeErr
	case readErr != nil:
		res.err = readErr
	}
	return res
}

// writeSigned is the sending half of stream: it takes free window slots
// (all that are free, up to maxSignedBatch), signs that many messages,
// queues them and writes them with one system call.
func (s *signingSender) writeSigned(ctx context.Context, opt streamOptions, q *echoQueue, slots chan struct{}, readerDone <-chan struct{}, res *streamResult) error {
	lines := make([]string, 0, maxSignedBatch)
	recs := make([]pendingEcho, 0, maxSignedBatch)
	for opt.limit == 0 || res.sent < opt.limit {
		select {
		case <-opt.stop:
			return nil
		default:
		}
		select {
		case slots <- struct{}{}:
		case <-opt.stop:
			return nil
		case <-readerDone:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
		n := 1
	fill:
		for n < maxSignedBatch && (opt.limit == 0 || res.sent+n < opt.limit) {
			select {
			case slots <- struct{}{}:
				n++
			default:
				break fill
			}
		}
		lines, recs = lines[:0], recs[:0]
		start := time.Now()
		for i := range n {
			msgid, sig, line, err := s.key.signedPrivmsg(s.channel, s.venue, opt.body(res.sent+i), start)
			if err != nil {
				return err
			}
			lines = append(lines, line)
			recs = append(recs, pendingEcho{msgid: msgid, sig: sig})
		}
		now := time.Now()
		res.signTime += now.Sub(start)
		for i := range recs {
			recs[i].sent = now
		}
		q.push(recs...)
		if err := s.conn.writeLines(ctx, lines...); err != nil {
			return err
		}
		res.sent += n
	}
	return nil
}

// answerStats is what the reading half of a stream collects.
type answerStats struct {
	accepted        int
	latencies       []time.Duration
	rejections      map[string]int
	firstRejections []string
	lastAnswer      time.Time
	msgids          []string
}

// refusalNumerics are the replies that refuse a PRIVMSG to a channel.
var refusalNumerics = map[string]bool{
	"401": true, "403": true, "404": true, "407": true, "411": true, "412": true, "417": true, "421": true, "451": true,
}

// readAnswers is the reading half of stream: it matches each echo or
// refusal with the oldest unanswered message and frees its slot. It
// returns nil at the drain PONG, or the error that ended the connection.
func (s *signingSender) readAnswers(ctx context.Context, q *echoQueue, slots chan struct{}, drainToken string, opt streamOptions, st *answerStats) error {
	for {
		line, err := s.conn.readLine(ctx)
		if err != nil {
			return err
		}
		msg, err := ircmsg.Parse(line)
		if err != nil {
			continue
		}
		var reason string
		switch {
		case msg.Command == "PING":
			if err := s.conn.writeLines(ctx, pong(msg)); err != nil {
				return err
			}
			continue
		case msg.Command == "PONG":
			if msg.Param(len(msg.Params)-1) == drainToken {
				return nil
			}
			continue
		case msg.Command == "ERROR":
			return fmt.Errorf("%w: %s", ErrRefused, line)
		case msg.Command == "PRIVMSG" && strings.EqualFold(msg.Param(0), s.channel):
		case msg.Command == "FAIL" && msg.Param(0) == "PRIVMSG":
			reason = "FAIL " + msg.Param(1)
		case refusalNumerics[msg.Command]:
			reason = msg.Command
		default:
			continue
		}
		now := time.Now()
		p, ok := q.pop()
		if !ok {
			st.reject("unexpected "+msg.Command, line)
			continue
		}
		<-slots
		st.lastAnswer = now
		switch {
		case reason != "":
			st.reject(reason, line)
		case msg.Tags["msgid"] != p.msgid:
			st.reject("echo out of order", line)
		case msg.Tags[tagSig] != p.sig:
			st.reject("signature altered", line)
		default:
			st.accepted++
			st.latencies = append(st.latencies, now.Sub(p.sent))
			if opt.keepIDs {
				st.msgids = append(st.msgids, p.msgid)
			}
			if opt.counter != nil {
				opt.counter.Add(1)
			}
		}
	}
}

func (st *answerStats) reject(reason, line string) {
	st.rejections[reason]++
	if len(st.firstRejections) < maxFirstErrors {
		st.firstRejections = append(st.firstRejections, line)
	}
}

// watchdog closes the connection when the oldest unanswered message, or
// the drain after the last one, waits longer than timeout.
func (s *signingSender) watchdog(q *echoQueue, timeout time.Duration, drainDeadline *atomic.Int64, readerDone <-chan struct{}, stalled *atomic.Bool) {
	ticker := time.NewTicker(min(timeout/10, 100*time.Millisecond))
	defer ticker.Stop()
	for {
		select {
		case <-readerDone:
			return
		case now := <-ticker.C:
			oldest, waiting := q.oldest()
			late := waiting && now.Sub(oldest) > timeout
			if dl := drainDeadline.Load(); dl != 0 && now.UnixNano() > dl {
				late = true
			}
			if late {
				stalled.Store(true)
				s.conn.close()
				return
			}
		}
	}
}

// benchBody returns size-byte message texts: a prefix naming the message,
// then filler.
func benchBody(prefix string, size int) func(seq int) string {
	filler := strings.Repeat("x", size)
	return func(seq int) string {
		head := prefix + strconv.Itoa(seq) + " "
		if len(head) >= size {
			return head[:size]
		}
		return head + filler[:size-len(head)]
	}
}
