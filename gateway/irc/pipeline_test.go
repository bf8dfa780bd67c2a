package irc

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/testcluster/poll"
)

// storeHistory is the event store as the edge reads it and its chat service writes it.
type storeHistory interface {
	History
	chat.Store
}

// fakeHistory is a History whose Append records each call's msgids, refuses chosen ids as
// duplicates or failures, and can hold calls back until released. Other methods are not used.
type fakeHistory struct {
	storeHistory
	mu      sync.Mutex
	calls   [][]string
	dup     map[string]bool
	fail    map[string]bool
	gate    chan struct{} // when set, each call waits for a value
	entered atomic.Int64
}

func (h *fakeHistory) Append(ctx context.Context, msgs ...*eventstore.Message) error {
	h.entered.Add(1)
	if h.gate != nil {
		<-h.gate
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	ids := make([]string, len(msgs))
	var dups []string
	for i, m := range msgs {
		ids[i] = m.MsgID
		if h.fail[m.MsgID] {
			return fmt.Errorf("disk on fire: %w", io.ErrUnexpectedEOF)
		}
	}
	h.calls = append(h.calls, ids)
	for i, m := range msgs {
		m.Seq = 0
		if h.dup[m.MsgID] {
			dups = append(dups, m.MsgID)
			continue
		}
		m.Seq = int64(100 + i)
	}
	if dups != nil {
		return fmt.Errorf("%w: %s", eventstore.ErrDuplicate, strings.Join(dups, ","))
	}
	return nil
}

func (h *fakeHistory) stored() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, c := range h.calls {
		out = append(out, c...)
	}
	return out
}

func newPipelineClient(t *testing.T, h *fakeHistory) (*client, *recordConn) {
	t.Helper()
	cfg := unitConfig(256 << 10)
	cfg.Messages = chat.New(chat.Config{Store: h, NodeName: "n1"})
	s := New(cfg, nil, nil, h, nil)
	t.Cleanup(s.Close)
	conn := &recordConn{}
	return s.newClient(conn), conn
}

// waitLines waits until conn has received n lines.
func waitLines(t *testing.T, conn *recordConn, n int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		lines, _, _ := conn.snapshot()
		if len(lines) >= n {
			return lines
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %d lines, want %d: %q", len(lines), n, lines)
		}
		time.Sleep(time.Millisecond) // polling a condition with a deadline, not synchronizing
	}
}

// queueMessage submits a command that stores msgid and, once stored, "delivers" it by recording
// it and replying with its id.
func queueMessage(c *client, msgid string, delivered *[]string, mu *sync.Mutex) {
	rb := &respBuf{c: c}
	st := &sendStep{write: &chat.Write{Kind: chat.Message,
		Event: eventstore.Message{MsgID: msgid, Venue: "#pipe", Command: "PRIVMSG", Text: msgid, Time: time.Now()}}}
	st.deliver = func() {
		mu.Lock()
		*delivered = append(*delivered, msgid)
		mu.Unlock()
		rb.add(ircmsg.Message{Command: "PRIVMSG", Params: []string{"#pipe", msgid}})
	}
	c.pipe.submit(queuedCommand{rb: rb, step: st})
}

// queueReply submits a command that only has a reply.
func queueReply(c *client, text string) {
	rb := &respBuf{c: c}
	rb.add(ircmsg.Message{Command: "NOTICE", Params: []string{"*", text}})
	c.pipe.submit(queuedCommand{rb: rb})
}

// TestPipelineOrderAndOutcomes queues stored messages and plain replies and checks that the store
// sees the messages in order, that only stored messages are delivered, and that every line (echo,
// reply, FAIL) comes out in command order.
func TestPipelineOrderAndOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		dup, fail []string
		want      []string // the lines' last parameter, in order
	}{
		{"all stored", nil, nil,
			[]string{"m1", "m2", "reply-a", "m3", "m4", "reply-b", "m5"}},
		{"a duplicate fails alone", []string{"m2"}, nil,
			[]string{"m1", "That event id is already in use", "reply-a", "m3", "m4", "reply-b", "m5"}},
		{"a failed store delivers nothing", nil, []string{"m4"},
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &fakeHistory{dup: map[string]bool{}, fail: map[string]bool{}, gate: make(chan struct{})}
			for _, id := range tc.dup {
				h.dup[id] = true
			}
			for _, id := range tc.fail {
				h.fail[id] = true
			}
			c, conn := newPipelineClient(t, h)
			var mu sync.Mutex
			var delivered []string
			queueMessage(c, "m1", &delivered, &mu)
			// m1's store is under way (held by the gate) while the rest are queued behind it.
			waitFor(t, func() bool { return h.entered.Load() == 1 })
			queueMessage(c, "m2", &delivered, &mu)
			queueReply(c, "reply-a")
			queueMessage(c, "m3", &delivered, &mu)
			queueMessage(c, "m4", &delivered, &mu)
			queueReply(c, "reply-b")
			queueMessage(c, "m5", &delivered, &mu)
			close(h.gate)
			c.pipe.wait()

			if got := h.entered.Load(); got != 2 {
				t.Errorf("Append called %d times, want 2 (one for m1, one for the rest)", got)
			}
			want := tc.want
			if tc.fail != nil {
				// m4 fails its whole batch (m2..m5): m1 is delivered, the others FAIL.
				unavailable := "The message could not be stored; it was not delivered"
				want = []string{"m1", unavailable, "reply-a", unavailable, unavailable, "reply-b", unavailable}
			} else if got := h.stored(); !slices.Equal(got, []string{"m1", "m2", "m3", "m4", "m5"}) {
				t.Errorf("store order %q", got)
			}
			lines := waitLines(t, conn, len(want))
			var got []string
			for _, l := range lines {
				m, err := ircmsg.Parse(strings.TrimRight(l, "\r\n"))
				if err != nil {
					t.Fatalf("parse %q: %v", l, err)
				}
				got = append(got, m.Param(len(m.Params)-1))
			}
			if !slices.Equal(got, want) {
				t.Errorf("lines %q, want %q", got, want)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, id := range delivered {
				if slices.Contains(tc.dup, id) || (tc.fail != nil && id != "m1") {
					t.Errorf("%s delivered though not stored", id)
				}
			}
		})
	}
}

// TestPipelineBoundsInFlight holds the store back and checks that the submitter is held at
// maxInFlight commands, then that everything completes once the store answers.
func TestPipelineBoundsInFlight(t *testing.T) {
	h := &fakeHistory{gate: make(chan struct{})}
	c, _ := newPipelineClient(t, h)
	var mu sync.Mutex
	var delivered []string
	var submitted atomic.Int64
	total := maxInFlight + 8
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range total {
			queueMessage(c, fmt.Sprintf("m%02d", i), &delivered, &mu)
			submitted.Add(1)
		}
	}()
	waitFor(t, func() bool { return submitted.Load() == maxInFlight })
	if n := submitted.Load(); n > maxInFlight {
		t.Fatalf("%d commands submitted while the store was held, want at most %d", n, maxInFlight)
	}
	close(h.gate)
	<-done
	c.pipe.wait()
	mu.Lock()
	defer mu.Unlock()
	want := make([]string, total)
	for i := range want {
		want[i] = fmt.Sprintf("m%02d", i)
	}
	if !slices.Equal(delivered, want) {
		t.Errorf("delivered %q", delivered)
	}
	if !slices.Equal(h.stored(), want) {
		t.Errorf("stored %q", h.stored())
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	poll.Until(t, "the condition", cond)
}

func TestPipelinable(t *testing.T) {
	c, _ := newPipelineClient(t, &fakeHistory{})
	c.registered.Store(true)
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"PRIVMSG #a :hi", true},
		{"NOTICE bob :hi", true},
		{"@+typing=active TAGMSG #a", true},
		{"PRIVMSG #a,#b :hi", false},
		{"@+draft/edit=01HXZ3K9Q8W2ABCDEFGHJKMNPQ PRIVMSG #a :fixed", false},
		{"@+draft/delete=01HXZ3K9Q8W2ABCDEFGHJKMNPQ TAGMSG #a", false},
		{"@+delete=01HXZ3K9Q8W2ABCDEFGHJKMNPQ TAGMSG #a", false},
		{"@+react=👍;+reply=01HXZ3K9Q8W2ABCDEFGHJKMNPQ TAGMSG #a", false},
		{"@+draft/react=👍;+draft/reply=01HXZ3K9Q8W2ABCDEFGHJKMNPQ TAGMSG #a", false},
		{"@+freeq.at/unreact=👍;+reply=01HXZ3K9Q8W2ABCDEFGHJKMNPQ TAGMSG #a", false},
		{"@+draft/react=👍 TAGMSG #a", true}, // no +reply: reacts to nothing, an ordinary TAGMSG
		{"JOIN #a", false},
		{"PRIVMSG", false},
	} {
		m, err := ircmsg.Parse(tc.line)
		if err != nil {
			t.Fatalf("parse %q: %v", tc.line, err)
		}
		if got := c.pipelinable(m); got != tc.want {
			t.Errorf("%q: pipelinable %v, want %v", tc.line, got, tc.want)
		}
	}
	c.registered.Store(false)
	m, _ := ircmsg.Parse("PRIVMSG #a :hi")
	if c.pipelinable(m) {
		t.Error("an unregistered client's message is pipelinable")
	}
}
