package node

import (
	"sync/atomic"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// TestPanicsEndOnlyWhatTheyHit: a panic injected in each loop (a connection's command, its
// message pipeline, the render queue) closes at most the connection it hit; the node keeps
// serving everyone else and new connections.
func TestPanicsEndOnlyWhatTheyHit(t *testing.T) {
	var armed atomic.Value // the point that panics once
	armed.Store("")
	n := startNode(t, t.TempDir(), func(c *Config) {
		c.Faults = &Faults{PanicAt: func(point string) bool { return armed.CompareAndSwap(point, "") }}
	})
	bystander, _ := guest(t, n, "bystander")
	joinChannels(t, bystander, "#p")

	// stillServes shows the node serving: the bystander's commands are answered, and a new
	// client can register and join.
	stillServes := func(t *testing.T, fresh string) {
		t.Helper()
		syncClient(t, bystander)
		c, _ := guest(t, n, fresh)
		joinChannels(t, c, "#p")
		expectFrom(t, bystander, fresh, "JOIN", "#p")
	}
	cases := []struct {
		name    string
		point   string
		trigger func(t *testing.T, nick string) // the victim's session, which may be closed
		closes  bool
	}{
		{"connection command", PanicHistoryRead, func(t *testing.T, nick string) {
			v, _ := guest(t, n, nick, "batch", "server-time")
			sendLines(t, v, "JOIN #p") // the JOIN replay reads history on the connection's goroutine
			expect(t, v, "ERROR")
		}, true},
		{"message pipeline", PanicHistoryAppend, func(t *testing.T, nick string) {
			v, _ := guest(t, n, nick)
			joinChannels(t, v, "#p")
			sendLines(t, v, "PRIVMSG #p :never stored")
			expect(t, v, "ERROR")
		}, true},
		{"render queue", PanicRender, func(t *testing.T, nick string) {
			v, _ := guest(t, n, nick)
			sendLines(t, v, "JOIN #elsewhere") // its rendering panics
			eventually(t, "the panic to be used", func() bool { return armed.Load() == "" })
		}, false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			victim := "victim" + string(rune('a'+i))
			armed.Store(tc.point)
			tc.trigger(t, victim)
			if armed.Load() != "" {
				t.Fatalf("the injected panic at %s did not happen", tc.point)
			}
			if tc.closes {
				sessionGone(t, n, victim)
			}
			stillServes(t, "fresh"+string(rune('a'+i)))
		})
	}
	n.Machine().Read(func(st *fsm.State) {
		if !st.NickInUse("bystander") {
			t.Fatalf("the bystander's session ended")
		}
	})
}
