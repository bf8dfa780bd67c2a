package fsm

import "testing"

func TestApplyRenameChannel(t *testing.T) {
	base := with(world(),
		Join{Session: "s-alice", Channel: "#old"}, Join{Session: "s-bob", Channel: "#old"},
		Topic{Session: "s-alice", Channel: "#old", Text: "the topic"},
		Pin{Session: "s-alice", Channel: "#old", MsgID: "m1"},
		SetReadMarker{DID: didBob, Target: "#old", At: 1_700_000_000_000},
		SetFavorites{DID: didBob, Favorites: []string{"#x", "#old"}},
		Join{Session: "s-guest", Channel: "#taken"},
	)
	rename := func(session, from, to string) RenameChannel {
		return RenameChannel{Session: session, Channel: from, NewName: to, Reason: "typo"}
	}
	runApplyCases(t, []applyCase{
		{
			name: "everything follows the new name", setup: base, cmd: rename("s-alice", "#old", "#new"),
			want: Result{Code: OK}, events: []EventKind{EvRename},
			check: func(t *testing.T, st *State, _ int64) {
				if st.channels["#old"] != nil {
					t.Fatal("the old name still names a channel")
				}
				ch := st.channels["#new"]
				if ch == nil || ch.Name != "#new" || ch.Topic != "the topic" || len(ch.members) != 2 || len(ch.Pins) != 1 || ch.FounderDID != didAlice {
					t.Fatalf("renamed channel %+v", ch)
				}
				for _, id := range []string{"s-alice", "s-bob"} {
					if se := st.sessions[id]; !se.channels["#new"] || se.channels["#old"] {
						t.Errorf("%s channels %v", id, se.channels)
					}
				}
				if st.ReadMarker(didBob, "#new") == 0 || st.ReadMarker(didBob, "#old") != 0 {
					t.Errorf("read marker did not follow: %v", st.readMarkers[didBob])
				}
				if got := st.favorites[didBob]; len(got) != 2 || got[1] != "#new" {
					t.Errorf("favourites %v", got)
				}
			},
		},
		{name: "not an operator", setup: base, cmd: rename("s-bob", "#old", "#new"), want: Result{Code: ErrChanOpNeeded}},
		{name: "name in use", setup: base, cmd: rename("s-alice", "#old", "#taken"), want: Result{Code: ErrChannelNameInUse}},
		{name: "another prefix type", setup: base, cmd: rename("s-alice", "#old", "&old"), want: Result{Code: ErrCannotRename}},
		{name: "same name", setup: base, cmd: rename("s-alice", "#old", "#old"), want: Result{Code: NoChange}},
		{name: "no such channel", setup: base, cmd: rename("s-alice", "#none", "#new"), want: Result{Code: ErrNoSuchChannel}},
		{name: "invalid new name", setup: base, cmd: rename("s-alice", "#old", "new"), want: Result{Code: ErrInvalid}},
		{name: "unfolded new name", setup: base, cmd: rename("s-alice", "#old", "#New"), want: Result{Code: ErrInvalid}},
		{name: "no session", setup: base, cmd: rename("s-gone", "#old", "#new"), want: Result{Code: ErrNoSuchSession}},
		{
			name: "users of a peer server in the channel", cmd: rename("s-alice", "#old", "#new"), want: Result{Code: ErrCannotRename},
			setup: with(base, RemotePresence{Peer: "did:web:peer.example", Op: RemoteJoin, Channel: "#old",
				Member: RemoteMember{Nick: "rb", User: "u", Host: "peer.example"}}),
		},
	})
}
