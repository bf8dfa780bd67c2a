package meta

import (
	"reflect"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

// TestLifecycle: a channel's keys follow it through a rename and go when it is deleted by any
// command that deletes channels; a guest's go when its session ends by any command that ends one.
func TestLifecycle(t *testing.T) {
	keys := func(st *fsm.State, owner string) map[string]string { return Of(st).Keys(owner) }
	withKeys := fsmtest.With(world(),
		fsm.Join{Session: "s-guest", Channel: "#g"}, Set{Session: "s-guest", Channel: "#g", Key: "url", Value: "https://g.example"},
		Set{Session: "s-guest", Key: "avatar", Value: "a"}, Set{Session: "s-alice", Key: "avatar", Value: "b"})
	fsmtest.RunCases(t, []fsmtest.Case{
		{
			Name: "a renamed channel keeps its keys", Setup: withKeys,
			Cmd: fsm.RenameChannel{Session: "s-guest", Channel: "#g", NewName: "#h"}, Want: fsm.Result{Code: fsm.OK},
			Events: []fsm.EventKind{fsm.EvRename},
			Check: func(t *testing.T, st *fsm.State, _ int64) {
				if keys(st, "#h")["url"] != "https://g.example" || keys(st, "#g") != nil {
					t.Errorf("keys of #h %v, of #g %v", keys(st, "#h"), keys(st, "#g"))
				}
			},
		},
		{
			Name: "a refused rename moves nothing", Setup: fsmtest.With(withKeys, fsm.Join{Session: "s-bob", Channel: "#g"}),
			Cmd: fsm.RenameChannel{Session: "s-bob", Channel: "#g", NewName: "#h"}, Want: fsm.Result{Code: fsm.ErrChanOpNeeded},
			Check: func(t *testing.T, st *fsm.State, _ int64) {
				if keys(st, "#g")["url"] == "" || keys(st, "#h") != nil {
					t.Errorf("keys of #g %v, of #h %v", keys(st, "#g"), keys(st, "#h"))
				}
			},
		},
		{
			Name: "a channel kicked empty goes with its keys", Setup: fsmtest.With(withKeys, fsm.Join{Session: "s-alice", Channel: "#g"},
				fsm.Part{Session: "s-alice", Channel: "#g"}),
			Cmd: fsm.Kick{Session: "s-guest", Channel: "#g", Target: "s-guest"}, Want: fsm.Result{Code: fsm.OK},
			Events: []fsm.EventKind{fsm.EvKick},
			Check: func(t *testing.T, st *fsm.State, _ int64) {
				if st.ChannelExists("#g") || keys(st, "#g") != nil {
					t.Errorf("#g kept: %v", keys(st, "#g"))
				}
			},
		},
		{
			Name: "an expired channel goes with its keys",
			Setup: fsmtest.With(world(), fsm.Join{Session: "s-alice", Channel: "#o"},
				Set{Session: "s-alice", Channel: "#o", Key: "url", Value: "u"}, fsm.Part{Session: "s-alice", Channel: "#o"}),
			Cmd: fsm.ExpireChannels{UnownedAfter: 1, OwnedAfter: 1}, Want: fsm.Result{Code: fsm.OK, Count: 1},
			Check: func(t *testing.T, st *fsm.State, _ int64) {
				if st.ChannelExists("#o") || keys(st, "#o") != nil {
					t.Errorf("#o kept: %v", keys(st, "#o"))
				}
			},
		},
		{
			Name: "a purged node's guests lose their keys, DIDs keep theirs", Setup: withKeys,
			Cmd: fsm.PurgeNode{Node: fsmtest.Node, Reason: "gone"}, Want: fsm.Result{Code: fsm.OK, Count: 4},
			Events: []fsm.EventKind{fsm.EvQuit, fsm.EvQuit, fsm.EvQuit, fsm.EvQuit},
			Check: func(t *testing.T, st *fsm.State, _ int64) {
				if keys(st, guestOwner("s-guest")) != nil || keys(st, "#g") != nil || keys(st, didAlice)["avatar"] != "b" {
					t.Errorf("metadata after the purge: %v", section.Of(st).Owners)
				}
			},
		},
	})
}

// TestView reads targets, members and owners through the view.
func TestView(t *testing.T) {
	h := fsmtest.NewHarness(t)
	h.OK(world()...)
	h.OK(fsm.Join{Session: "s-alice", Channel: "#c"}, fsm.Join{Session: "s-guest", Channel: "#c"},
		Set{Session: "s-alice", Key: "avatar", Value: "a"}, Set{Session: "s-guest", Key: "url", Value: "g"},
		Set{Session: "s-alice", Channel: "#c", Key: "url", Value: "c"}, fsmtest.Session("s-alice2", "alice2", didAlice))
	h.Read(func(st *fsm.State) {
		v := Of(st)
		for _, tc := range []struct {
			target, id string
			want       Target
			ok         bool
		}{
			{"*", "s-alice", Target{Nick: "alice", Owner: didAlice, Self: true, Readable: true}, true},
			{"ALICE", "s-alice", Target{Nick: "alice", Owner: didAlice, Self: true, Readable: true}, true},
			{"guest", "s-alice", Target{Nick: "guest", Owner: "session:s-guest", Readable: true}, true},
			{"#C", "s-alice", Target{Channel: "#c", Owner: "#c", Op: true, Readable: true, Members: 2}, true},
			{"#c", "s-guest", Target{Channel: "#c", Owner: "#c", Readable: true, Members: 2}, true},
			{"#none", "s-alice", Target{}, false},
			{"nobody", "s-alice", Target{}, false},
			{"*", "s-gone", Target{}, false},
		} {
			if got, ok := v.Resolve(tc.target, tc.id, ""); got != tc.want || ok != tc.ok {
				t.Errorf("Resolve(%q, %q) = %+v, %v; want %+v, %v", tc.target, tc.id, got, ok, tc.want, tc.ok)
			}
		}
		want := []NickKeys{{Nick: "alice", Keys: map[string]string{"avatar": "a"}}, {Nick: "guest", Keys: map[string]string{"url": "g"}}}
		if got := v.Members("#c"); !reflect.DeepEqual(got, want) {
			t.Errorf("Members(#c) = %v", got)
		}
		if got := v.SessionsOf(v.OwnerOf("s-alice")); !reflect.DeepEqual(got, []string{"s-alice", "s-alice2"}) && !reflect.DeepEqual(got, []string{"s-alice2", "s-alice"}) {
			t.Errorf("SessionsOf(alice) = %v", got)
		}
		if got := v.SessionsOf(v.OwnerOf("s-guest")); !reflect.DeepEqual(got, []string{"s-guest"}) {
			t.Errorf("SessionsOf(guest) = %v", got)
		}
		if v.OwnerOf("s-gone") != "" || v.Keys("#none") != nil {
			t.Error("an absent owner has metadata")
		}
		// Keys is a copy.
		v.Keys(didAlice)["avatar"] = "changed"
		if v.Keys(didAlice)["avatar"] != "a" {
			t.Error("Keys shares the state's map")
		}
	})
}
