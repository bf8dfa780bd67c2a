package load

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// changeFailureNumerics are the replies that refuse a TOPIC, MODE or PIN.
var changeFailureNumerics = map[string]bool{
	"401": true, "403": true, "442": true, "472": true, "478": true, "479": true, "482": true,
}

// changeWriter is a client that makes replicated changes to its own
// channel, connected to one node.
type changeWriter struct {
	index   int
	nick    string
	channel string
	tag     string
	conn    lineConn
	log     *changeLog
	kinds   []ChangeKind
	topic   func(seq int) string
	pinIDs  []string // msgids of the messages it pins and unpins
	next    int      // changes made so far
	modes   int      // MODE changes made so far
	pins    int      // PIN changes made so far
	done    chan struct{}
	readErr error // what ended the read loop; valid once done is closed
}

// changeObserver is a member of a writer's channel connected to another
// node; it sees the writer's changes once its node applied them.
type changeObserver struct {
	conn   lineConn
	log    *changeLog
	topics chan string // RPL_TOPIC (332) texts, for the final check
	done   chan struct{}
}

// writerCaps are what a writer asks for: echo-message so that seeding a
// pin target returns its msgid, message-tags for the pin tags.
const writerCaps = "message-tags server-time account-tag echo-message"

// setupChangeWriter registers, joins (and so founds) its channel and, for
// pins, posts the messages it will pin.
func setupChangeWriter(ctx context.Context, d *dialer, w *changeWriter, pinTargets int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := d.dial(ctx)
	if err != nil {
		return err
	}
	if err := w.register(ctx, conn, pinTargets); err != nil {
		conn.close()
		return err
	}
	w.conn = conn
	return nil
}

func (w *changeWriter) register(ctx context.Context, conn lineConn, pinTargets int) error {
	if err := conn.writeLines(ctx, "CAP REQ :"+writerCaps, "NICK "+w.nick, "USER "+w.nick+" 0 * :"+w.nick, "CAP END"); err != nil {
		return err
	}
	if _, err := readUntil(ctx, conn, registrationFailures, isCommand("001")); err != nil {
		return fmt.Errorf("registering as %s: %w", w.nick, err)
	}
	if err := conn.writeLines(ctx, "JOIN "+w.channel); err != nil {
		return err
	}
	if _, err := readUntil(ctx, conn, joinFailures, isCommand("366")); err != nil {
		return fmt.Errorf("joining %s: %w", w.channel, err)
	}
	for i := range pinTargets {
		if err := conn.writeLines(ctx, "PRIVMSG "+w.channel+" :pin target "+strconv.Itoa(i)); err != nil {
			return err
		}
		echo, err := readUntil(ctx, conn, []string{"404", "FAIL"}, func(m ircmsg.Message) bool {
			return m.Command == "PRIVMSG" && strings.EqualFold(m.Param(0), w.channel)
		})
		if err != nil {
			return fmt.Errorf("posting a message to pin: %w", err)
		}
		id := echo.Tags["msgid"]
		if id == "" {
			return errors.New("the echo of a message to pin has no msgid (message-tags and echo-message needed)")
		}
		w.pinIDs = append(w.pinIDs, id)
	}
	return nil
}

// setupChangeObserver registers on another node and joins the writer's
// channel.
func setupChangeObserver(ctx context.Context, d *dialer, nick, channel string, log *changeLog, timeout time.Duration) (*changeObserver, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := d.dial(ctx)
	if err != nil {
		return nil, err
	}
	if err := registerWithCapsAndJoin(ctx, conn, nick, channel); err != nil {
		conn.close()
		return nil, err
	}
	return &changeObserver{conn: conn, log: log, topics: make(chan string, 1), done: make(chan struct{})}, nil
}

// nextChange builds the writer's next change line and its key.
func (w *changeWriter) nextChange() (line string, kind ChangeKind, key string) {
	kind = w.kinds[w.next%len(w.kinds)]
	seq := w.next
	w.next++
	switch kind {
	case ChangeMode:
		sign := "+"
		if w.modes%2 == 1 {
			sign = "-"
		}
		mask := "m" + w.tag + "-" + strconv.Itoa(w.index) + "-" + strconv.Itoa(w.modes/2) + "!*@*"
		w.modes++
		return "MODE " + w.channel + " " + sign + "b " + mask, kind, modeKey(sign+"b", mask)
	case ChangePin:
		id := w.pinIDs[(w.pins/2)%len(w.pinIDs)]
		verb := "PIN"
		if w.pins%2 == 1 {
			verb = "UNPIN"
		}
		w.pins++
		return verb + " " + w.channel + " " + id, kind, pinKey(verb == "PIN", id)
	}
	text := w.topic(seq)
	return "TOPIC " + w.channel + " :" + text, ChangeTopic, topicKey(text)
}

// finalTopic is the closing topic of the loss check.
func (w *changeWriter) finalTopic() (line, key string) {
	text := "end-" + w.tag + "-" + strconv.Itoa(w.index) + " the last change of this run"
	return "TOPIC " + w.channel + " :" + text, topicKey(text)
}

func topicKey(text string) string {
	key, _, _ := strings.Cut(text, " ")
	return "topic " + key
}

func modeKey(change, mask string) string { return "mode " + change + " " + strings.ToLower(mask) }

func pinKey(pin bool, msgid string) string {
	if pin {
		return "pin " + msgid
	}
	return "unpin " + msgid
}

// changeKeyOf returns the key of a TOPIC, ban MODE or pin NOTICE about
// channel, or "" for any other message.
func changeKeyOf(m ircmsg.Message, channel string) string {
	if !strings.EqualFold(m.Param(0), channel) {
		return ""
	}
	switch m.Command {
	case "TOPIC":
		return topicKey(m.Param(1))
	case "MODE":
		if len(m.Params) >= 3 {
			return modeKey(m.Params[1], m.Params[2])
		}
	case "NOTICE":
		if id, ok := m.Tags["+freeq.at/pin"]; ok {
			return pinKey(true, id)
		}
		if id, ok := m.Tags["+freeq.at/unpin"]; ok {
			return pinKey(false, id)
		}
	}
	return ""
}

// readLoop reads the writer's connection until it ends: its own echoes
// and the refusals answer its changes; PINGs are answered.
func (w *changeWriter) readLoop() {
	defer close(w.done)
	ctx := context.Background() // no deadline: closing the connection ends the loop
	for {
		line, err := w.conn.readLine(ctx)
		if err != nil {
			w.readErr = err
			return
		}
		at := time.Now()
		m, err := ircmsg.Parse(line)
		if err != nil {
			continue
		}
		switch {
		case m.Command == "PING":
			if err := w.conn.writeLines(ctx, pong(m)); err != nil {
				w.readErr = err
				return
			}
		case m.Command == "FAIL":
			w.log.fail("FAIL "+m.Param(0)+" "+m.Param(1), at)
		case changeFailureNumerics[m.Command]:
			w.log.fail(m.Command, at)
		case m.Command == "NOTICE" && strings.EqualFold(m.Param(0), w.nick) && !strings.Contains(m.Source, "!"):
			// "Message … is already pinned" and the like, from the server.
			w.log.fail("NOTICE "+truncate(m.Param(1), 60), at)
		default:
			if key := changeKeyOf(m, w.channel); key != "" {
				w.log.ack(key, at)
			}
		}
	}
}

// readLoop reads the observer's connection until it ends, matching the
// writer's changes as they arrive.
func (o *changeObserver) readLoop(channel string) {
	defer close(o.done)
	ctx := context.Background()
	for {
		line, err := o.conn.readLine(ctx)
		if err != nil {
			return
		}
		at := time.Now()
		m, err := ircmsg.Parse(line)
		if err != nil {
			continue
		}
		switch m.Command {
		case "PING":
			if err := o.conn.writeLines(ctx, pong(m)); err != nil {
				return
			}
		case "332":
			select {
			case o.topics <- m.Param(len(m.Params) - 1):
			default:
			}
		default:
			if key := changeKeyOf(m, channel); key != "" {
				o.log.observe(key, at)
			}
		}
	}
}

// errWriterStalled reports a writer that waited longer than its timeout
// for the answer to a change.
var errWriterStalled = errors.New("load: no answer to a change within the timeout")

// pacing schedules a writer's changes: the k-th no earlier than
// start + offset + k·every (every 0: no schedule).
type pacing struct {
	start         time.Time
	every, offset time.Duration
}

// wait sleeps until change k is due; false when stop closed first.
func (p pacing) wait(ctx context.Context, stop <-chan struct{}, k int) bool {
	if p.every <= 0 {
		return true
	}
	d := time.Until(p.start.Add(p.offset + time.Duration(k)*p.every))
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-stop:
	case <-ctx.Done():
	}
	return false
}

// writeChanges sends changes, at most window unanswered and on pace's
// schedule, until stop closes; it returns early when an answer is later
// than timeout or the connection ends.
func (w *changeWriter) writeChanges(ctx context.Context, stop <-chan struct{}, window int, timeout time.Duration, pace pacing) error {
	for {
		if !pace.wait(ctx, stop, w.next) {
			return ctx.Err()
		}
		if err := w.waitRoom(ctx, stop, window, timeout); err != nil {
			return err
		}
		select {
		case <-stop:
			return nil
		default:
		}
		line, kind, key := w.nextChange()
		w.log.record(kind, key, false)
		if err := w.conn.writeLines(ctx, line); err != nil {
			return err
		}
	}
}

// waitRoom waits until fewer than window changes are unanswered. It
// returns nil when there is room or stop closes.
func (w *changeWriter) waitRoom(ctx context.Context, stop <-chan struct{}, window int, timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for w.log.pending() >= window {
		select {
		case <-w.log.answers:
		case <-stop:
			return nil
		case <-w.done:
			return fmt.Errorf("load: writer %s: the connection ended: %w", w.nick, w.readErr)
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return errWriterStalled
		}
	}
	return nil
}

// drain waits (up to timeout) until every change sent is answered.
func (w *changeWriter) drain(ctx context.Context, timeout time.Duration) error {
	never := make(chan struct{})
	return w.waitRoom(ctx, never, 1, timeout)
}

// closeChange sets the closing topic and waits for its echo and for the
// observer to see it; then the observer reads the channel's topic on its
// node. Raft applies entries in order on every node and this writer is
// the only one changing the channel, so once the observer has the closing
// topic, every change committed before it has reached the observer too.
// It returns the topic the observer's node reports.
func (w *changeWriter) closeChange(ctx context.Context, o *changeObserver, timeout time.Duration) (closing, current string, err error) {
	line, key := w.finalTopic()
	closing = strings.TrimPrefix(line, "TOPIC "+w.channel+" :")
	w.log.record(ChangeTopic, key, true)
	if err := w.conn.writeLines(ctx, line); err != nil {
		return closing, "", err
	}
	if err := w.drain(ctx, timeout); err != nil {
		return closing, "", fmt.Errorf("the closing topic was not answered: %w", err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-w.log.finalSeen:
	case <-o.done:
		return closing, "", errors.New("the observer's connection ended")
	case <-ctx.Done():
		return closing, "", ctx.Err()
	case <-timer.C:
		return closing, "", errors.New("the observer did not see the closing topic within the timeout")
	}
	if err := o.conn.writeLines(ctx, "TOPIC "+w.channel); err != nil {
		return closing, "", err
	}
	select {
	case current = <-o.topics:
		return closing, current, nil
	case <-o.done:
		return closing, "", errors.New("the observer's connection ended")
	case <-ctx.Done():
		return closing, "", ctx.Err()
	case <-timer.C:
		return closing, "", errors.New("no answer to TOPIC within the timeout")
	}
}

// truncate shortens s to n bytes.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// quitAll sends QUIT on every connection, waits (bounded) for their read
// loops to end and closes them.
func quitAll(conns []lineConn, dones []chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), quitWait)
	defer cancel()
	for _, c := range conns {
		_ = c.writeLines(ctx, "QUIT :benchmark done")
	}
	for i, c := range conns {
		select {
		case <-dones[i]:
		case <-ctx.Done():
		}
		c.close()
		<-dones[i]
	}
}
