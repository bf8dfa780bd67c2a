package irc

import (
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// lockedState is a State over one fsm.State that a test changes in place.
type lockedState struct {
	mu sync.RWMutex
	st *fsm.State
}

func (l *lockedState) Read(f func(*fsm.State)) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	f(l.st)
}

func (l *lockedState) change(f func(*fsm.State)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f(l.st)
}

// A member whose JOIN applies while a channel message is being stored gets the message live:
// the recipients are read after the store, not when the message was checked. (Before, such a
// member got it neither live nor from a history request made before the message was stored:
// B14 found it as lost deliveries.)
func TestChannelMessageReachesAMemberWhoJoinedDuringTheStore(t *testing.T) {
	state := &lockedState{st: fsm.NewState()}
	h := &fakeHistory{gate: make(chan struct{})}
	s := New(Config{ServerName: "irc.test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, state, nil, h, nil)
	t.Cleanup(s.Close)

	alice := s.newClient(&recordConn{})
	bobConn := &recordConn{}
	bob := s.newClient(bobConn)
	alice.nick, alice.user = "alice", "a"
	bob.nick, bob.user = "bob", "b"
	s.mu.Lock()
	s.clients[alice.id], s.clients[bob.id] = alice, bob
	s.mu.Unlock()
	state.change(func(st *fsm.State) {
		st.Sessions[alice.id] = &fsm.Session{ID: alice.id, Nick: "alice", User: "a"}
		st.Sessions[bob.id] = &fsm.Session{ID: bob.id, Nick: "bob", User: "b"}
		st.Channels["#c"] = &fsm.Channel{Name: "#c", Members: map[string]*fsm.Member{alice.id: {Op: true}}}
	})

	rb := &respBuf{c: alice}
	step := alice.channelMessage("PRIVMSG", "", "#c", "hello", nil, rb)
	if step == nil {
		t.Fatalf("message refused: %q", rb.msgs)
	}
	alice.pipe.submit(queuedCommand{rb: rb, step: step})
	waitFor(t, func() bool { return h.entered.Load() == 1 }) // the store is under way
	state.change(func(st *fsm.State) { st.Channels["#c"].Members[bob.id] = &fsm.Member{} })
	close(h.gate)
	alice.pipe.wait()

	lines := waitLines(t, bobConn, 1)
	if !strings.Contains(lines[0], "PRIVMSG #c :hello") {
		t.Fatalf("bob got %q, want the PRIVMSG", lines)
	}
}
