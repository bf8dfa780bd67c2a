package av

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/raft/fsm"
	fsmav "github.com/palaver-chat/palaver/raft/fsm/av"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
	"github.com/palaver-chat/palaver/sfu"
	"github.com/palaver-chat/palaver/testcluster/poll"
)

// gatedProposer applies to a test machine once its gate is open.
type gatedProposer struct {
	m    *fsmtest.Machine
	gate chan struct{}
}

func (p *gatedProposer) Propose(ctx context.Context, cmd fsm.Command) (fsm.Result, error) {
	select {
	case <-p.gate:
	case <-ctx.Done():
		return fsm.Result{}, ctx.Err()
	}
	return p.m.Apply(cmd)
}

type told struct {
	did, text string
	tags      map[string]string
}

func newControlGateway(t *testing.T, operDIDs ...string) (*Gateway, *fsmtest.Machine, *gatedProposer, chan told) {
	t.Helper()
	s, err := sfu.New(sfu.Config{UDPAddr: "127.0.0.1:0", AllowPrivateCandidates: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	m := fsmtest.New()
	p := &gatedProposer{m: m, gate: make(chan struct{})}
	close(p.gate)
	tells := make(chan told, 8)
	g := New(Config{Node: fsmtest.Node, BaseURL: "http://node.test", State: m, Propose: p, SFU: s, OperDIDs: operDIDs,
		Tell: func(did, text string, tags map[string]string) { tells <- told{did, text, tags} }})
	t.Cleanup(g.Close)
	m.MustOK(t, fsmtest.Session("s-op", "op", "did:plc:op"), fsmtest.Session("s-bob", "bob", "did:plc:bob"),
		fsmtest.Session("s-guest", "guest", ""), fsmtest.Session("s-out", "out", "did:plc:out"),
		fsm.Join{Session: "s-op", Channel: "#c"}, fsm.Join{Session: "s-bob", Channel: "#c"}, fsm.Join{Session: "s-guest", Channel: "#c"})
	return g, m, p, tells
}

func msg(session, did, command, status string, tags ...string) ChannelMessage {
	m := ChannelMessage{Session: session, DID: did, Command: command, Channel: "#c", Status: status, Tags: map[string]string{}}
	for _, kv := range tags {
		k, v, _ := strings.Cut(kv, "=")
		m.Tags[k] = v
	}
	return m
}

// waitState polls the machine until cond holds.
func waitState(t *testing.T, m *fsmtest.Machine, what string, cond func(*fsm.State) bool) {
	t.Helper()
	poll.Until(t, what, func() bool {
		ok := false
		m.Read(func(st *fsm.State) { ok = cond(st) })
		return ok
	})
}

func TestCheckMessage(t *testing.T) {
	g, m, _, _ := newControlGateway(t, "did:plc:root")
	active := func(st *fsm.State) (fsmav.AVCall, bool) { return fsmav.Of(st).Active("#c") }

	// Before a call.
	for _, tc := range []struct {
		name string
		m    ChannelMessage
		want string
	}{
		{"plain message", msg("s-bob", "did:plc:bob", "PRIVMSG", ""), ""},
		{"other tags", msg("s-bob", "did:plc:bob", "TAGMSG", "", "+typing=active", "+freeq.at/av-signal=x"), ""},
		{"join without a call", msg("s-bob", "did:plc:bob", "TAGMSG", "", TagJoin), FailNoCall},
		{"end without a call", msg("s-op", "did:plc:op", "TAGMSG", "", TagEnd), FailNoCall},
		{"guest starts", msg("s-guest", "", "TAGMSG", "", TagStart), FailAccountRequired},
		{"outsider starts", msg("s-out", "did:plc:out", "TAGMSG", "", TagStart), FailNotOnChannel},
		{"forged state", msg("s-bob", "did:plc:bob", "TAGMSG", "", TagState+"=ended"), FailInvalidTag},
		{"forged error", msg("s-bob", "did:plc:bob", "TAGMSG", "", TagError+"=x"), FailInvalidTag},
		{"two actions", msg("s-bob", "did:plc:bob", "TAGMSG", "", TagStart, TagEnd), FailInvalidTag},
		{"on a NOTICE", msg("s-bob", "did:plc:bob", "NOTICE", "", TagStart), FailInvalidTag},
		{"on a status message", msg("s-bob", "did:plc:bob", "TAGMSG", "@", TagStart), FailInvalidTag},
		{"reason with a control character", msg("s-bob", "did:plc:bob", "TAGMSG", "", TagStart, TagReason+"=a\x07b"), FailInvalidTag},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if r := g.CheckMessage(tc.m); r != nil {
				got = r.Code
				if r.Text == "" {
					t.Error("a refusal without text")
				}
			}
			if got != tc.want {
				t.Fatalf("refusal %q, want %q", got, tc.want)
			}
		})
	}
	m.Read(func(st *fsm.State) {
		if _, ok := active(st); ok {
			t.Fatal("a refused action started a call")
		}
	})

	// Bob starts, the operator joins, Bob leaves, then a second start is refused while live.
	if r := g.CheckMessage(msg("s-bob", "did:plc:bob", "TAGMSG", "", TagStart)); r != nil {
		t.Fatalf("start: %+v", r)
	}
	var id string
	waitState(t, m, "the call", func(st *fsm.State) bool { c, ok := active(st); id = c.ID; return ok && c.CreatedBy == "did:plc:bob" })
	if r := g.CheckMessage(msg("s-bob", "did:plc:bob", "TAGMSG", "", TagStart)); r == nil || r.Code != FailActive || !strings.Contains(r.Text, id) {
		t.Fatalf("second start: %+v", r)
	}
	if r := g.CheckMessage(msg("s-op", "did:plc:op", "TAGMSG", "", TagJoin, TagID+"="+id)); r != nil {
		t.Fatalf("join: %+v", r)
	}
	waitState(t, m, "the operator in the roster", func(st *fsm.State) bool { c, _ := active(st); return c.LiveParticipants() == 1 })
	for _, tc := range []struct {
		name string
		m    ChannelMessage
		want string
	}{
		{"join twice", msg("s-op", "did:plc:op", "TAGMSG", "", TagJoin), FailAlreadyIn},
		{"join another call", msg("s-bob", "did:plc:bob", "TAGMSG", "", TagJoin, TagID+"=OTHER"), FailNoCall},
		{"leave without being in", msg("s-bob", "did:plc:bob", "TAGMSG", "", TagLeave), FailNotInCall},
		{"the starter ends", msg("s-bob", "did:plc:bob", "TAGMSG", "", TagEnd), FailNotOperator},
		{"a guest ends", msg("s-guest", "", "TAGMSG", "", TagEnd), FailNotOperator},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := g.CheckMessage(tc.m); r == nil || r.Code != tc.want {
				t.Fatalf("refusal %+v, want %s", r, tc.want)
			}
		})
	}
	// A configured operator DID ends it from outside the channel.
	if r := g.CheckMessage(msg("", "did:plc:root", "TAGMSG", "", TagEnd, TagReason+"=closing")); r != nil {
		t.Fatalf("server operator: %+v", r)
	}
	waitState(t, m, "the end", func(st *fsm.State) bool {
		c, _ := fsmav.Of(st).Call(id)
		return !c.Live() && c.EndedBy == "did:plc:root" && c.EndReason == "closing"
	})
}

// TestCheckMessageRace: two starts pass the check before either applies; Raft refuses the
// second, and its sender is told which call won.
func TestCheckMessageRace(t *testing.T) {
	g, m, p, tells := newControlGateway(t)
	p.gate = make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(p.gate) }) }
	t.Cleanup(release)
	for _, who := range []struct{ session, did string }{{"s-op", "did:plc:op"}, {"s-bob", "did:plc:bob"}} {
		if r := g.CheckMessage(msg(who.session, who.did, "TAGMSG", "", TagStart)); r != nil {
			t.Fatalf("%s: %+v", who.did, r)
		}
	}
	release()
	select {
	case got := <-tells:
		var winner string
		m.Read(func(st *fsm.State) { c, _ := fsmav.Of(st).Active("#c"); winner = c.ID })
		if got.did != "did:plc:bob" || got.tags[TagError] != "start-collision" || got.tags[TagID] != winner || winner == "" || got.text == "" {
			t.Fatalf("told %+v (winner %s)", got, winner)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the loser was not told")
	}
}

func TestCheckMessageWithoutAV(t *testing.T) {
	m := fsmtest.New()
	g := New(Config{Node: fsmtest.Node, State: m, Propose: &gatedProposer{m: m, gate: make(chan struct{})}})
	t.Cleanup(g.Close)
	if r := g.CheckMessage(msg("s", "did:plc:a", "TAGMSG", "", "+typing=active")); r != nil {
		t.Fatalf("a message without call actions: %+v", r)
	}
	// Only a start needs this node's forwarding unit; the other actions act on a call another node
	// hosts (here there is none).
	for _, tag := range actionTags {
		r := g.CheckMessage(msg("s", "did:plc:a", "TAGMSG", "", tag))
		if tag == TagStart && (r == nil || r.Code != FailUnavailable) || tag != TagStart && (r == nil || r.Code == FailUnavailable) {
			t.Fatalf("%s with calls off: %+v", tag, r)
		}
	}
}
