package irc

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

// renderEnv is an IRC edge over a state the test changes and renders by hand, the way the node's
// render queue does: applying (state changes) runs ahead of rendering (Observe).
type renderEnv struct {
	t     *testing.T
	s     *Server
	state *fsmtest.Machine
	index uint64
}

func newRenderEnv(t *testing.T, prop Proposer) *renderEnv {
	state := fsmtest.New()
	s := New(unitConfig(1<<30), state, prop, nil, nil)
	t.Cleanup(s.Close)
	return &renderEnv{t: t, s: s, state: state}
}

// client connects and registers a local session.
func (e *renderEnv) client(nick string) (*client, *recordConn) {
	conn := &recordConn{}
	c := e.s.newClient(conn)
	c.nick, c.user = nick, "u"
	c.registered.Store(true)
	e.s.mu.Lock()
	e.s.addClient(c)
	e.s.mu.Unlock()
	reg := fsmtest.Session(c.id, nick, "")
	reg.Host = c.host
	e.state.MustOK(e.t, reg)
	return c, conn
}

func (e *renderEnv) ref(c *client) fsm.SessionRef {
	return fsm.SessionRef{ID: c.id, Nick: c.nick, User: c.user, Host: c.host}
}

// applyJoin changes the state as a Join does and returns the event to render.
func (e *renderEnv) applyJoin(c *client, channel string) fsm.Event {
	e.index++
	e.state.MustOK(e.t, fsm.Join{Session: c.id, Channel: channel})
	return fsm.Event{Kind: fsm.EvJoin, Index: e.index, Actor: e.ref(c), Channel: channel}
}

// applyPart changes the state as a Part does and returns the event to render.
func (e *renderEnv) applyPart(c *client, channel string) fsm.Event {
	e.index++
	e.state.MustOK(e.t, fsm.Part{Session: c.id, Channel: channel})
	return fsm.Event{Kind: fsm.EvPart, Index: e.index, Actor: e.ref(c), Channel: channel}
}

func lineCommands(lines []string) []string {
	var out []string
	for _, l := range lines {
		m, err := ircmsg.Parse(l)
		if err != nil {
			continue
		}
		cmd := m.Command
		if cmd == "FAIL" || cmd == "JOIN" || cmd == "PART" {
			cmd += " " + m.Param(0)
		}
		if m.Source != "" && strings.Contains(m.Source, "!") {
			cmd = strings.SplitN(m.Source, "!", 2)[0] + ":" + cmd
		}
		out = append(out, cmd)
	}
	return out
}

// Rendering runs behind applying: an event is announced to the local members of its channel as of
// that event. Bob, whose JOIN is applied but not rendered yet, does not get Alice's earlier JOIN
// (he sees her in his NAMES) but does get Carol's later PART; Carol, who left after Alice joined,
// still gets Alice's JOIN. Reading the members from the state (as before the render queue) fails
// both.
func TestRenderAudienceIsTheMembershipAsOfTheEvent(t *testing.T) {
	e := newRenderEnv(t, nil)
	alice, _ := e.client("alice")
	bob, bobConn := e.client("bob")
	carol, carolConn := e.client("carol")
	e.s.Observe([]fsm.Event{e.applyJoin(carol, "#c")})
	joinAlice := e.applyJoin(alice, "#c")
	joinBob := e.applyJoin(bob, "#c")
	partCarol := e.applyPart(carol, "#c")

	e.s.Observe([]fsm.Event{joinAlice})
	e.s.Observe([]fsm.Event{joinBob})
	e.s.Observe([]fsm.Event{partCarol})

	if got := lineCommands(waitLines(t, bobConn, 2)); strings.Join(got, ",") != "bob:JOIN #c,carol:PART #c" {
		t.Errorf("bob got %q, want his own JOIN and Carol's PART, not Alice's earlier JOIN", got)
	}
	want := "carol:JOIN #c,alice:JOIN #c,bob:JOIN #c,carol:PART #c"
	if got := lineCommands(waitLines(t, carolConn, 4)); strings.Join(got, ",") != want {
		t.Errorf("carol got %q, want %s", got, want)
	}
}

// A snapshot restore skips events: Resync rebuilds the local members from the state.
func TestRenderResyncAfterRestore(t *testing.T) {
	e := newRenderEnv(t, nil)
	alice, aliceConn := e.client("alice")
	bob, _ := e.client("bob")
	e.applyJoin(alice, "#c") // covered by the snapshot: never rendered
	e.s.Resync()
	e.s.Observe([]fsm.Event{e.applyJoin(bob, "#c")})
	if got := lineCommands(waitLines(t, aliceConn, 1)); strings.Join(got, ",") != "bob:JOIN #c" {
		t.Errorf("alice got %q, want bob's JOIN", got)
	}
}

// lateProposer is a Proposer whose Join proposals apply only after the caller gave up, or just
// before it gives up, as raft does when a proposal's context ends.
type lateProposer struct {
	env *renderEnv
	mu  sync.Mutex
	// before, when set, applies and renders the entry before returning the error.
	before bool
	// result, when set, is returned instead of an error (a retry that finds the member).
	result *fsm.Result
	// late holds the renders of applied entries to run later.
	late []fsm.Event
	// earlier is rendered during the next proposal (an earlier attempt applying late).
	earlier []fsm.Event
}

func (p *lateProposer) Propose(_ context.Context, cmd fsm.Command) (fsm.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	join, ok := cmd.(fsm.Join)
	if !ok {
		return fsm.Result{}, errors.New("unexpected command")
	}
	if len(p.earlier) > 0 {
		p.env.s.Observe(p.earlier)
		p.earlier = nil
	}
	if p.result != nil {
		return *p.result, nil
	}
	c := p.env.s.localClient(join.Session)
	ev := p.env.applyJoin(c, join.Channel)
	if p.before {
		p.env.s.Observe([]fsm.Event{ev})
	} else {
		p.late = append(p.late, ev)
	}
	return fsm.Result{}, context.DeadlineExceeded
}

func joinCommand(channel string) ircmsg.Message {
	return ircmsg.Message{Command: "JOIN", Params: []string{channel}}
}

// The "told FAIL yet member" case: a JOIN whose proposal timed out but applied later. The client
// is told the outcome is unknown; when its JOIN is applied and rendered it gets the echo and then
// the topic and names, whether that happens after the command (late), during it (before the error
// returned), or during a retry (which then finds it a member).
func TestJoinWhoseOutcomeWasUnknownGetsNamesWhenItApplies(t *testing.T) {
	const wantLate = "FAIL JOIN,irc.test:JOIN #c,353,366"
	for _, tc := range []struct {
		name string
		run  func(e *renderEnv, p *lateProposer, c *client)
		want string
	}{
		{"applied after the FAIL", func(e *renderEnv, p *lateProposer, c *client) {
			c.dispatch(joinCommand("#c"))
			e.s.Observe(p.late)
		}, wantLate},
		{"applied before the error returned", func(e *renderEnv, p *lateProposer, c *client) {
			p.before = true
			c.dispatch(joinCommand("#c"))
		}, "JOIN #c,FAIL JOIN,353,366"},
		{"applied during a retry", func(e *renderEnv, p *lateProposer, c *client) {
			c.dispatch(joinCommand("#c"))
			p.earlier, p.late = p.late, nil
			p.result = &fsm.Result{Code: fsm.NoChange}
			c.dispatch(joinCommand("#c"))
		}, "FAIL JOIN,JOIN #c,353,366"},
		{"applied after the FAIL, then a retry", func(e *renderEnv, p *lateProposer, c *client) {
			c.dispatch(joinCommand("#c"))
			e.s.Observe(p.late)
			p.result = &fsm.Result{Code: fsm.NoChange}
			c.dispatch(joinCommand("#c")) // already a member, NAMES already sent: nothing
		}, "FAIL JOIN,JOIN #c,353,366"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &lateProposer{}
			e := newRenderEnv(t, p)
			p.env = e
			alice, conn := e.client("alice")
			tc.run(e, p, alice)
			lines := waitLines(t, conn, 4)
			var got []string
			for _, c := range lineCommands(lines) {
				got = append(got, strings.TrimPrefix(c, "alice:"))
			}
			want := strings.ReplaceAll(tc.want, "irc.test:", "")
			if strings.Join(got, ",") != want {
				t.Errorf("got %q, want %s", lines, want)
			}
			if !strings.Contains(lines[slicesIndex(got, "FAIL JOIN")], "outcome is unknown") {
				t.Errorf("FAIL text %q should say the outcome is unknown", lines[0])
			}
		})
	}
}

func slicesIndex(s []string, v string) int {
	for i := range s {
		if s[i] == v {
			return i
		}
	}
	return 0
}

// BenchmarkRenderJoin is the render of one JOIN to a channel of members local clients (B5's n-th
// JOIN): one serialization per capability variant and one delivery per member. Members alternate
// between two capability sets.
func BenchmarkRenderJoin(b *testing.B) {
	for _, members := range []int{100, 5000} {
		b.Run("members="+strconv.Itoa(members), func(b *testing.B) {
			state := fsmtest.New()
			s := New(unitConfig(1<<40), state, nil, nil, nil)
			b.Cleanup(s.Close)
			var joiner *client
			for i := range members {
				c := s.newClient(&discardConn{})
				c.nick, c.user = "n"+strconv.Itoa(i), "u"
				bits := capServerTime | capMessageTags
				if i%2 == 1 {
					bits |= capExtendedJoin | capAccountTag
				}
				c.caps.Store(uint32(bits))
				s.addClient(c)
				state.MustOK(b, fsmtest.Session(c.id, c.nick, ""), fsm.Join{Session: c.id, Channel: "#big"})
				joiner = c
			}
			prepareRendered(s)
			ev := []fsm.Event{{Kind: fsm.EvJoin, Index: 1, Time: 1714564800000, Actor: fsm.SessionRef{ID: joiner.id, Nick: joiner.nick, User: "u", Host: "h"}, Channel: "#big"}}
			b.ReportAllocs()
			for b.Loop() {
				s.Observe(ev)
			}
			b.ReportMetric(float64(members)*float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
		})
	}
}

// prepareRendered has the edge take the state's members as its rendered members, as after a
// snapshot restore.
func prepareRendered(s *Server) { s.Resync() }
