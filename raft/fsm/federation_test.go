package fsm

import (
	"testing"
)

func TestApplyFederatedMode(t *testing.T) {
	const peerOp = "op!u@peer.example"
	fm := func(addOnly bool, changes ...ModeChange) FederatedMode {
		return FederatedMode{Channel: "#c", Changes: changes, SetBy: peerOp, SetByDID: "did:web:op.peer.example", AddOnly: addOnly}
	}
	on := func(c ModeChange) ModeChange { c.Add = true; return c }
	moderated := func(want bool) func(*testing.T, *State, int64) {
		return chanCheck(func(t *testing.T, c *Channel) {
			if c.Moderated != want {
				t.Errorf("+m = %v, want %v", c.Moderated, want)
			}
		})
	}
	runApplyCases(t, []applyCase{
		{name: "flags and bans from the home", setup: channelWorld(), cmd: fm(false, on(ModeChange{Mode: "m"}), on(ModeChange{Mode: "b", Arg: "*!*@spam"})),
			want:   Result{Code: OK, Applied: []ModeChange{{Add: true, Mode: "m"}, {Add: true, Mode: "b", Arg: "*!*@spam"}}},
			events: []EventKind{EvMode}, check: moderated(true)},
		{name: "a sync never weakens", setup: with(channelWorld(), fm(false, on(ModeChange{Mode: "m"}))), cmd: fm(true, ModeChange{Mode: "m"}),
			want: Result{Code: NoChange}, check: moderated(true)},
		{name: "the home cannot make ops", setup: channelWorld(), cmd: fm(false, on(ModeChange{Mode: "o", Arg: didCarol})), want: Result{Code: NoChange},
			check: chanCheck(func(t *testing.T, c *Channel) {
				if c.didOps[didCarol] {
					t.Error("a DID op from the home")
				}
			})},
		{name: "keys and +E do not cross", setup: channelWorld(), cmd: fm(false, on(ModeChange{Mode: "k", Arg: "x"}), on(ModeChange{Mode: "E"})), want: Result{Code: NoChange}},
		{name: "a local op grants a DID op", setup: channelWorld(),
			cmd:  FederatedMode{Session: "s-alice", Channel: "#c", Changes: []ModeChange{on(ModeChange{Mode: "o", Arg: "did:web:op.peer.example"})}},
			want: Result{Code: OK, Applied: []ModeChange{{Add: true, Mode: "o", Arg: "did:web:op.peer.example"}}}, events: []EventKind{EvMode},
			check: chanCheck(func(t *testing.T, c *Channel) {
				if !c.didOps["did:web:op.peer.example"] {
					t.Error("DID op not granted")
				}
			})},
		{name: "a non-op cannot grant", setup: channelWorld(),
			cmd:  FederatedMode{Session: "s-guest", Channel: "#c", Changes: []ModeChange{on(ModeChange{Mode: "o", Arg: didCarol})}},
			want: Result{Code: ErrChanOpNeeded}},
		{name: "the founder stays", setup: channelWorld(),
			cmd:  FederatedMode{Session: "s-alice", Channel: "#c", Changes: []ModeChange{{Mode: "o", Arg: didAlice}}},
			want: Result{Code: NoChange}},
		{name: "no such channel", setup: world(), cmd: fm(false, on(ModeChange{Mode: "m"})), want: Result{Code: ErrNoSuchChannel}},
	})
}

func TestApplyFederatedPin(t *testing.T) {
	pin := func(unpin bool) FederatedPin {
		return FederatedPin{Channel: "#c", MsgID: "m1", Unpin: unpin, PinnedBy: "op!u@peer.example", PinnedByDID: "did:web:op.peer.example"}
	}
	runApplyCases(t, []applyCase{
		{name: "pin", setup: channelWorld(), cmd: pin(false), want: Result{Code: OK}, events: []EventKind{EvPin}, check: pinned("m1")},
		{name: "again", setup: with(channelWorld(), pin(false)), cmd: pin(false), want: Result{Code: ErrAlreadyPinned}, check: pinned("m1")},
		{name: "unpin", setup: with(channelWorld(), pin(false)), cmd: pin(true), want: Result{Code: OK}, events: []EventKind{EvUnpin}, check: pinned()},
		{name: "unpin what is not pinned", setup: channelWorld(), cmd: pin(true), want: Result{Code: ErrNotPinned}},
	})
}

func TestApplyRemotePresence(t *testing.T) {
	const peer = "did:web:peer.example"
	rb := RemoteMember{Nick: "rb", User: "u", Host: "peer.example", DID: "did:web:rb.peer.example"}
	join := func(m RemoteMember) RemotePresence {
		return RemotePresence{Peer: peer, Op: RemoteJoin, Channel: "#c", Member: m}
	}
	remote := func(want ...string) func(*testing.T, *State, int64) {
		return func(t *testing.T, st *State, _ int64) {
			var got []string
			for _, m := range st.RemoteIn("#c") {
				got = append(got, m.Nick)
			}
			if !sameJSON(t, got, want) {
				t.Errorf("remote members %v, want %v", got, want)
			}
		}
	}
	banned := with(channelWorld(), Mode{Session: "s-alice", Channel: "#c", Changes: []ModeChange{{Add: true, Mode: "b", Arg: rb.DID}}})
	rc := RemoteMember{Nick: "rc", User: "u", Host: "peer.example"}
	runApplyCases(t, []applyCase{
		{name: "join", setup: channelWorld(), cmd: join(rb), want: Result{Code: OK}, events: []EventKind{EvJoin}, check: remote("rb")},
		{name: "join twice", setup: with(channelWorld(), join(rb)), cmd: join(rb), want: Result{Code: NoChange}, check: remote("rb")},
		{name: "a local ban by DID", setup: banned, cmd: join(rb), want: Result{Code: ErrBanned}, check: remote()},
		{name: "part", setup: with(channelWorld(), join(rb)), cmd: RemotePresence{Peer: peer, Op: RemotePart, Channel: "#c", Member: rb},
			want: Result{Code: OK}, events: []EventKind{EvPart}, check: remote()},
		{name: "nick", setup: with(channelWorld(), join(rb)), cmd: RemotePresence{Peer: peer, Op: RemoteNick, Member: rb, NewNick: "rb2"},
			want: Result{Code: OK}, events: []EventKind{EvNick}, check: remote("rb2")},
		{name: "quit", setup: with(channelWorld(), join(rb)), cmd: RemotePresence{Peer: peer, Op: RemoteQuit, Member: rb},
			want: Result{Code: OK}, events: []EventKind{EvQuit}, check: remote()},
		{name: "snapshot replaces", setup: with(channelWorld(), join(rb)), cmd: RemotePresence{Peer: peer, Op: RemoteMembers, Channel: "#c", Members: []RemoteMember{rc}},
			want: Result{Code: OK}, events: []EventKind{EvPart, EvJoin}, check: remote("rc")},
		{name: "snapshot skips the banned", setup: banned, cmd: RemotePresence{Peer: peer, Op: RemoteMembers, Channel: "#c", Members: []RemoteMember{rb, rc}},
			want: Result{Code: OK}, events: []EventKind{EvJoin}, check: remote("rc")},
		{name: "the link drops", setup: with(channelWorld(), join(rb), join(rc)), cmd: RemotePresence{Peer: peer, Op: RemoteClear},
			want: Result{Code: OK}, events: []EventKind{EvQuit, EvQuit}, check: remote()},
		{name: "another peer's members stay", setup: with(channelWorld(), join(rb)), cmd: RemotePresence{Peer: "did:web:other.example", Op: RemoteClear},
			want: Result{Code: NoChange}, check: remote("rb")},
		{name: "no peer", setup: channelWorld(), cmd: RemotePresence{Op: RemoteJoin, Channel: "#c", Member: rb}, want: Result{Code: ErrInvalid}},
	})
}

func TestApplyFederatedKickAndInvite(t *testing.T) {
	by := "op!u@peer.example"
	runApplyCases(t, []applyCase{
		{name: "kick", setup: channelWorld(), cmd: FederatedKick{Channel: "#c", Target: "s-bob", By: by, Reason: "bye"},
			want: Result{Code: OK}, events: []EventKind{EvKick}, check: member("s-bob", false)},
		{name: "not the founder", setup: channelWorld(), cmd: FederatedKick{Channel: "#c", Target: "s-alice", By: by},
			want: Result{Code: ErrChanOpNeeded}, check: member("s-alice", true)},
		{name: "not a member", setup: aliceOnly(), cmd: FederatedKick{Channel: "#c", Target: "s-bob", By: by}, want: Result{Code: ErrUserNotInChannel}},
		{name: "invite", setup: aliceOnly(), cmd: FederatedInvite{Channel: "#c", Target: "s-bob", By: by},
			want: Result{Code: OK}, events: []EventKind{EvInvite}},
		{name: "invite a member", setup: channelWorld(), cmd: FederatedInvite{Channel: "#c", Target: "s-bob", By: by}, want: Result{Code: ErrUserOnChannel}},
	})
}
