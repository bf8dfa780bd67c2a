package irc

import (
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

// A member whose JOIN applies while a channel message is being stored gets the message live:
// the recipients are read after the store, not when the message was checked. (Before, such a
// member got it neither live nor from a history request made before the message was stored:
// B14 found it as lost deliveries.)
func TestChannelMessageReachesAMemberWhoJoinedDuringTheStore(t *testing.T) {
	state := fsmtest.New()
	h := &fakeHistory{gate: make(chan struct{})}
	s := quietServer(t, Config{}, state, h)

	alice := s.newClient(&recordConn{})
	bobConn := &recordConn{}
	bob := s.newClient(bobConn)
	alice.nick, alice.user = "alice", "a"
	bob.nick, bob.user = "bob", "b"
	s.mu.Lock()
	s.addClient(alice)
	s.addClient(bob)
	s.mu.Unlock()
	state.MustOK(t, fsmtest.Session(alice.id, "alice", ""), fsmtest.Session(bob.id, "bob", ""),
		fsm.Join{Session: alice.id, Channel: "#c"})

	rb := &respBuf{c: alice}
	step := alice.channelMessage("PRIVMSG", "", "#c", "hello", nil, rb)
	if step == nil {
		t.Fatalf("message refused: %q", rb.msgs)
	}
	alice.pipe.submit(queuedCommand{rb: rb, step: step})
	waitFor(t, func() bool { return h.entered.Load() == 1 }) // the store is under way
	state.MustOK(t, fsm.Join{Session: bob.id, Channel: "#c"})
	close(h.gate)
	alice.pipe.wait()

	lines := waitLines(t, bobConn, 1)
	if !strings.Contains(lines[0], "PRIVMSG #c :hello") {
		t.Fatalf("bob got %q, want the PRIVMSG", lines)
	}
}
