package irc

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

// A pipeline batch's consecutive messages to a large channel reach each member through one
// append to its queue, in the order they were sent, with a direct message between them kept in
// its place, and with no TAGMSG for a member without message-tags.
func TestBatchFanOutKeepsOrderAndCapabilities(t *testing.T) {
	state := fsmtest.New()
	s := quietServer(t, Config{}, state, &fakeHistory{})
	join := func(nick string, caps capBits) (*client, *recordConn) {
		c, conn := addClient(t, s, state, nick, caps)
		joinState(t, state, "#c", c)
		return c, conn
	}
	alice, _ := join("alice", capMessageTags|capEchoMessage)
	_, plainConn := join("plain", 0) // no message-tags; also the target of the direct message
	_, tagsConn := join("tagged", capMessageTags)
	for i := range inlineFanOut {
		join(fmt.Sprintf("m%d", i), capMessageTags|capServerTime)
	}

	sends := []struct{ cmd, target, text string }{
		{"PRIVMSG", "#c", "one"},
		{"TAGMSG", "#c", ""},
		{"PRIVMSG", "#c", "two"},
		{"PRIVMSG", "plain", "direct"},
		{"NOTICE", "#c", "three"},
	}
	var batch []queuedCommand
	for _, m := range sends {
		rb := &respBuf{c: alice, pipelined: true}
		var step *sendStep
		if m.target == "#c" {
			step = alice.channelMessage(m.cmd, "", "#c", m.text, map[string]string{"+typing": "active"}, rb)
		} else {
			step = alice.privateMessage(m.cmd, m.target, m.text, nil, rb)
		}
		if step == nil {
			t.Fatalf("%s refused: %q", m.cmd, rb.msgs)
		}
		batch = append(batch, queuedCommand{rb: rb, step: step})
	}
	alice.completeQueued(batch)

	tail := func(line string) string { // the command and its parameters, without tags and source
		line = strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(line, "@") {
			_, line, _ = strings.Cut(line, " ")
		}
		if strings.HasPrefix(line, ":") {
			_, line, _ = strings.Cut(line, " ")
		}
		return strings.Replace(line, " :", " ", 1)
	}
	plain := waitLines(t, plainConn, 4)
	var got []string
	for _, l := range plain {
		got = append(got, tail(l))
	}
	if want := []string{"PRIVMSG #c one", "PRIVMSG #c two", "PRIVMSG plain direct", "NOTICE #c three"}; !slices.Equal(got, want) {
		t.Fatalf("the member without message-tags got %q, want %q", got, want)
	}
	tagged := waitLines(t, tagsConn, 4)
	got = got[:0]
	for _, l := range tagged {
		got = append(got, tail(l))
	}
	if want := []string{"PRIVMSG #c one", "TAGMSG #c", "PRIVMSG #c two", "NOTICE #c three"}; !slices.Equal(got, want) {
		t.Fatalf("the member with message-tags got %q, want %q", got, want)
	}
	// The first run's three lines were appended at once, so they went in one write.
	tagsConn.mu.Lock()
	sizes := slices.Clone(tagsConn.sizes)
	tagsConn.mu.Unlock()
	if len(sizes) == 0 || sizes[0] < 3 {
		t.Errorf("writes to a member carried %v lines, want the first run's 3 in the first", sizes)
	}
}
