package irc

import (
	"bytes"
	"slices"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

// TestLocalMembersFollowsJoinsAndClients checks that a channel's cached member list is reused
// while nothing changes, and is built again after each change to either of its inputs: the
// state's local membership and the server's client set.
func TestLocalMembersFollowsJoinsAndClients(t *testing.T) {
	state := fsmtest.New()
	s := quietServer(t, Config{}, state, nil)
	clients := map[string]*client{}
	for _, nick := range []string{"ann", "bea", "cal", "dan"} {
		c := s.newClient(&recordConn{})
		c.nick, c.user = nick, "u"
		clients[nick] = c
		state.MustOK(t, fsmtest.Session(c.id, nick, ""))
	}
	register := func(nicks ...string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, n := range nicks {
			s.addClient(clients[n])
		}
	}
	register("ann", "bea", "cal")
	state.MustOK(t, fsm.Join{Session: clients["ann"].id, Channel: "#c"}, fsm.Join{Session: clients["bea"].id, Channel: "#c"})

	steps := []struct {
		name   string
		change func()
		want   []string
		reused bool // the list is the one built before the change
	}{
		{"first message", func() {}, []string{"ann", "bea"}, false},
		{"nothing changed", func() {}, []string{"ann", "bea"}, true},
		{"a topic changes nothing", func() { state.MustOK(t, fsm.Topic{Session: clients["ann"].id, Channel: "#c", Text: "t"}) }, []string{"ann", "bea"}, true},
		{"a join elsewhere", func() { state.MustOK(t, fsm.Join{Session: clients["cal"].id, Channel: "#d"}) }, []string{"ann", "bea"}, false},
		{"a local join", func() { state.MustOK(t, fsm.Join{Session: clients["cal"].id, Channel: "#c"}) }, []string{"ann", "bea", "cal"}, false},
		{"a member not yet among the clients", func() { state.MustOK(t, fsm.Join{Session: clients["dan"].id, Channel: "#c"}) }, []string{"ann", "bea", "cal"}, false},
		{"the member registers", func() { register("dan") }, []string{"ann", "bea", "cal", "dan"}, false},
		{"a client leaves", func() {
			s.mu.Lock()
			s.dropClient(clients["bea"])
			s.mu.Unlock()
		}, []string{"ann", "cal", "dan"}, false},
		{"a part", func() { state.MustOK(t, fsm.Part{Session: clients["cal"].id, Channel: "#c"}) }, []string{"ann", "dan"}, false},
		{"a restore", func() {
			if err := state.Restore(bytes.NewReader(fsmtest.Snapshot(t, state.Machine))); err != nil {
				t.Fatal(err)
			}
		}, []string{"ann", "dan"}, false},
		{"nothing changed after it", func() {}, []string{"ann", "dan"}, true},
	}
	var last []*client
	for _, st := range steps {
		st.change()
		got := s.localMembers("#c")
		var nicks []string
		for _, c := range got {
			nicks = append(nicks, c.nick)
		}
		slices.Sort(nicks)
		if !slices.Equal(nicks, st.want) {
			t.Fatalf("%s: members %v, want %v", st.name, nicks, st.want)
		}
		if reused := last != nil && len(got) > 0 && &got[0] == &last[0]; reused != st.reused {
			t.Fatalf("%s: list reused %v, want %v", st.name, reused, st.reused)
		}
		last = got
	}
	s.mu.Lock()
	s.dropClient(clients["ann"])
	s.mu.Unlock()
	if s.members.lists != nil {
		t.Fatalf("a client left and the cache still holds %d lists", len(s.members.lists))
	}
}
