package linkroute_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/palaver-chat/palaver/federation/peering"
	"github.com/palaver-chat/palaver/node/linkroute"
	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

const peerDID = "did:web:peer.example"

// fakePeering is federation with #away linked to a peer that is its home and #home linked to a
// peer whose home is this server; it records what it was asked and answers with err.
type fakePeering struct {
	err     error
	topics  []string
	changes []peering.Change
	acts    []peering.Change
}

func (f *fakePeering) IsLinked(ch string) bool      { return ch == "#away" || ch == "#home" }
func (f *fakePeering) HomeElsewhere(ch string) bool { return ch == "#away" }
func (f *fakePeering) RequestTopic(_ context.Context, ch, setBy, setByDID, text string) error {
	f.topics = append(f.topics, ch+" "+setBy+" "+setByDID+" "+text)
	return f.err
}
func (f *fakePeering) RequestChange(_ context.Context, c peering.Change) error {
	f.changes = append(f.changes, c)
	return f.err
}
func (f *fakePeering) ActOnRemote(_ context.Context, c peering.Change) error {
	f.acts = append(f.acts, c)
	return f.err
}

// state: "op" operates #away, #home and #plain; "member" is a member of them; #away's topic is
// locked (+t, a new channel's default); "rn" is a user of the peer in #away and #home, "elsewhere" one in #home only.
func state(t *testing.T) *fsmtest.Machine {
	m := fsmtest.New()
	m.MustOK(t, fsmtest.Session("op", "op", "did:plc:op"), fsmtest.Session("member", "member", ""))
	for _, ch := range []string{"#away", "#home", "#plain"} {
		m.MustOK(t, fsm.Join{Session: "op", Channel: ch}, fsm.Join{Session: "member", Channel: ch})
	}
	m.MustOK(t, fsm.RemotePresence{Peer: peerDID, Op: fsm.RemoteJoin, Channel: "#away", Member: fsm.RemoteMember{Nick: "rn", User: "u", Host: "peer.example", DID: "did:plc:rn"}},
		fsm.RemotePresence{Peer: peerDID, Op: fsm.RemoteJoin, Channel: "#home", Member: fsm.RemoteMember{Nick: "rn", User: "u", Host: "peer.example", DID: "did:plc:rn"}},
		fsm.RemotePresence{Peer: peerDID, Op: fsm.RemoteJoin, Channel: "#home", Member: fsm.RemoteMember{Nick: "elsewhere", User: "u", Host: "peer.example"}})
	m.Read(func(st *fsm.State) {
		if ch, _ := st.Channel("#away"); !ch.TopicLock() {
			t.Fatal("a new channel's topic is not locked")
		}
	})
	return m
}

var (
	op     = linkroute.Actor{Session: "op", Mask: "op!u@host.test", DID: "did:plc:op"}
	member = linkroute.Actor{Session: "member", Mask: "member!u@host.test"}
)

func TestTopic(t *testing.T) {
	m := state(t)
	for _, tc := range []struct {
		name      string
		actor     linkroute.Actor
		channel   string
		peerErr   error
		routed    bool
		want      error
		requested bool
	}{
		{name: "home here: proposed locally", actor: op, channel: "#home"},
		{name: "not linked: proposed locally", actor: op, channel: "#plain"},
		{name: "home elsewhere, operator: requested", actor: op, channel: "#away", routed: true, requested: true},
		{name: "home elsewhere, locked topic, not operator here", actor: member, channel: "#away", routed: true, want: linkroute.ErrNotOperator},
		{name: "the home refuses", actor: op, channel: "#away", peerErr: &peering.RefusedError{Why: "not-op"}, routed: true, want: &linkroute.RefusedError{Why: "not-op"}, requested: true},
		{name: "the link is down", actor: op, channel: "#away", peerErr: peering.ErrLinkDown, routed: true, want: linkroute.ErrLinkDown, requested: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakePeering{err: tc.peerErr}
			routed, err := linkroute.New(f, m).Topic(context.Background(), tc.actor, tc.channel, "new topic")
			if routed != tc.routed || !sameError(err, tc.want) {
				t.Fatalf("Topic = %v, %v; want %v, %v", routed, err, tc.routed, tc.want)
			}
			if got := len(f.topics) == 1; got != tc.requested {
				t.Fatalf("requested %v, want %v", f.topics, tc.requested)
			}
			if tc.requested && f.topics[0] != tc.channel+" "+tc.actor.Mask+" "+tc.actor.DID+" new topic" {
				t.Fatalf("request %q", f.topics[0])
			}
		})
	}
}

func TestModes(t *testing.T) {
	m := state(t)
	flags := []fsm.ModeChange{{Add: true, Mode: "i"}, {Add: true, Mode: "o", Target: "member"}, {Add: true, Mode: "b", Arg: "x!*@*"}}
	for _, tc := range []struct {
		name    string
		actor   linkroute.Actor
		channel string
		changes []fsm.ModeChange
		local   []fsm.ModeChange
		sent    []peering.ModeChange
		want    error
	}{
		{name: "home here: every change stays", actor: op, channel: "#home", changes: flags, local: flags},
		{name: "not linked: every change stays", actor: op, channel: "#plain", changes: flags, local: flags},
		{name: "home elsewhere: crossing modes requested, operators stay", actor: op, channel: "#away", changes: flags,
			local: []fsm.ModeChange{{Add: true, Mode: "o", Target: "member"}},
			sent:  []peering.ModeChange{{Add: true, Mode: "i"}, {Add: true, Mode: "b", Arg: "x!*@*"}}},
		{name: "home elsewhere: nothing crosses", actor: member, channel: "#away", changes: []fsm.ModeChange{{Add: true, Mode: "v", Target: "op"}},
			local: []fsm.ModeChange{{Add: true, Mode: "v", Target: "op"}}},
		{name: "home elsewhere: not an operator here", actor: member, channel: "#away", changes: flags,
			local: []fsm.ModeChange{{Add: true, Mode: "o", Target: "member"}}, want: linkroute.ErrNotOperator},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakePeering{}
			local, err := linkroute.New(f, m).Modes(context.Background(), tc.actor, tc.channel, tc.changes)
			if !reflect.DeepEqual(local, tc.local) || !sameError(err, tc.want) {
				t.Fatalf("Modes = %+v, %v; want %+v, %v", local, err, tc.local, tc.want)
			}
			var sent []peering.ModeChange
			for _, c := range f.changes {
				if c.Kind != peering.ChangeMode || c.Channel != tc.channel || c.Actor != tc.actor.Mask || c.ActorDID != tc.actor.DID {
					t.Fatalf("change %+v", c)
				}
				sent = append(sent, c.Modes...)
			}
			if !reflect.DeepEqual(sent, tc.sent) {
				t.Fatalf("sent %+v, want %+v", sent, tc.sent)
			}
		})
	}
}

func TestPin(t *testing.T) {
	m := state(t)
	for _, tc := range []struct {
		name    string
		actor   linkroute.Actor
		channel string
		add     bool
		routed  bool
		kind    string // of the request sent; "" none
		want    error
	}{
		{name: "home here", actor: op, channel: "#home", add: true},
		{name: "pin, home elsewhere", actor: op, channel: "#away", add: true, routed: true, kind: peering.ChangePin},
		{name: "unpin, home elsewhere", actor: op, channel: "#away", routed: true, kind: peering.ChangeUnpin},
		{name: "not an operator here", actor: member, channel: "#away", add: true, routed: true, want: linkroute.ErrNotOperator},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakePeering{}
			routed, err := linkroute.New(f, m).Pin(context.Background(), tc.actor, tc.channel, "01HXZ3K9Q8W2ABCDEFGHJKMNPQ", tc.add)
			if routed != tc.routed || !sameError(err, tc.want) {
				t.Fatalf("Pin = %v, %v; want %v, %v", routed, err, tc.routed, tc.want)
			}
			switch {
			case tc.kind == "" && len(f.changes) > 0:
				t.Fatalf("sent %+v", f.changes)
			case tc.kind != "" && (len(f.changes) != 1 || f.changes[0].Kind != tc.kind || f.changes[0].MsgID != "01HXZ3K9Q8W2ABCDEFGHJKMNPQ"):
				t.Fatalf("sent %+v, want one %s", f.changes, tc.kind)
			}
		})
	}
}

func TestTarget(t *testing.T) {
	m := state(t)
	for _, tc := range []struct {
		name    string
		actor   linkroute.Actor
		kind    linkroute.TargetKind
		channel string
		nick    string
		routed  bool
		sent    string // the kind sent; "" none
		want    error
	}{
		{name: "kick of a peer's user, home elsewhere", actor: op, kind: linkroute.Kick, channel: "#away", nick: "RN", routed: true, sent: peering.ChangeKick},
		{name: "kick of a peer's user, home here", actor: op, kind: linkroute.Kick, channel: "#home", nick: "rn", routed: true, sent: peering.ChangeKick},
		{name: "kick of a peer's user not in the channel", actor: op, kind: linkroute.Kick, channel: "#away", nick: "elsewhere"},
		{name: "invite of a peer's user not in the channel", actor: op, kind: linkroute.Invite, channel: "#away", nick: "elsewhere", routed: true, sent: peering.ChangeInvite},
		{name: "no such user of the peer", actor: op, kind: linkroute.Kick, channel: "#away", nick: "nobody"},
		{name: "channel not linked", actor: op, kind: linkroute.Kick, channel: "#plain", nick: "rn"},
		{name: "not an operator here", actor: member, kind: linkroute.Kick, channel: "#away", nick: "rn", routed: true, want: linkroute.ErrNotOperator},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakePeering{}
			user, routed, err := linkroute.New(f, m).Target(context.Background(), tc.actor, tc.kind, tc.channel, tc.nick, "bye")
			if routed != tc.routed || !sameError(err, tc.want) {
				t.Fatalf("Target = %q, %v, %v; want %v, %v", user, routed, err, tc.routed, tc.want)
			}
			switch {
			case tc.sent == "" && len(f.acts) > 0:
				t.Fatalf("sent %+v", f.acts)
			case tc.sent != "":
				if len(f.acts) != 1 || f.acts[0].Kind != tc.sent || f.acts[0].Channel != tc.channel || !equalFold(f.acts[0].Target, tc.nick) || user != f.acts[0].Target {
					t.Fatalf("sent %+v (user %q), want one %s of %s", f.acts, user, tc.sent, tc.nick)
				}
			}
		})
	}
}

// TestNoPeers: without peer servers nothing is linked and every change is this server's.
func TestNoPeers(t *testing.T) {
	s := linkroute.New(nil, nil)
	ctx := context.Background()
	if s.Linked("#away") || s.HomeElsewhere("#away") {
		t.Fatal("a channel is linked without peers")
	}
	if routed, err := s.Topic(ctx, op, "#away", "x"); routed || err != nil {
		t.Fatalf("Topic = %v, %v", routed, err)
	}
	changes := []fsm.ModeChange{{Add: true, Mode: "i"}}
	if local, err := s.Modes(ctx, op, "#away", changes); !reflect.DeepEqual(local, changes) || err != nil {
		t.Fatalf("Modes = %v, %v", local, err)
	}
	if routed, err := s.Pin(ctx, op, "#away", "m", true); routed || err != nil {
		t.Fatalf("Pin = %v, %v", routed, err)
	}
	if _, routed, err := s.Target(ctx, op, linkroute.Kick, "#away", "rn", ""); routed || err != nil {
		t.Fatalf("Target = %v, %v", routed, err)
	}
}

func sameError(err, want error) bool {
	var r, wr *linkroute.RefusedError
	switch {
	case want == nil:
		return err == nil
	case errors.As(want, &wr):
		return errors.As(err, &r) && *r == *wr
	}
	return errors.Is(err, want)
}

func equalFold(a, b string) bool { return fsm.Fold(a) == fsm.Fold(b) }
