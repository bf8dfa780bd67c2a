package meta

import (
	"fmt"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

func TestApplyMetadata(t *testing.T) {
	set := func(session, channel, key, value string) Set {
		return Set{Session: session, Channel: channel, Key: key, Value: value}
	}
	del := func(session, channel, key string) Set {
		return Set{Session: session, Channel: channel, Key: key, Delete: true}
	}
	withChan := fsmtest.With(world(), fsm.Join{Session: "s-alice", Channel: "#c"}, fsm.Join{Session: "s-bob", Channel: "#c"})
	full := world()
	for i := 0; i < MaxKeys; i++ {
		full = append(full, set("s-alice", "", fmt.Sprintf("k%d", i), "v"))
	}
	metaOf := func(st *fsm.State, owner string) map[string]string { return Of(st).Keys(owner) }

	fsmtest.RunCases(t, []fsmtest.Case{
		{
			Name: "a user sets its own key under its DID", Setup: world(), Cmd: set("s-alice", "", "avatar", "https://a.example/me.png"),
			Want: fsm.Result{Code: fsm.OK}, Events: []fsm.EventKind{EvChanged},
			Check: func(t *testing.T, st *fsm.State, _ int64) {
				if got := metaOf(st, didAlice)["avatar"]; got != "https://a.example/me.png" {
					t.Errorf("avatar %q", got)
				}
			},
		},
		{
			Name: "a guest's keys belong to its session and end with it", Setup: fsmtest.With(world(), set("s-guest", "", "url", "x")),
			Cmd: fsm.EndSession{Session: "s-guest", Reason: "bye"}, Want: fsm.Result{Code: fsm.OK}, Events: []fsm.EventKind{fsm.EvQuit},
			Check: func(t *testing.T, st *fsm.State, _ int64) {
				if m := metaOf(st, "session:s-guest"); m != nil {
					t.Errorf("guest metadata outlived the session: %v", m)
				}
			},
		},
		{
			Name: "a DID's keys outlive its session", Setup: fsmtest.With(world(), set("s-alice", "", "url", "x")),
			Cmd: fsm.EndSession{Session: "s-alice", Reason: "bye"}, Want: fsm.Result{Code: fsm.OK}, Events: []fsm.EventKind{fsm.EvQuit},
			Check: func(t *testing.T, st *fsm.State, _ int64) {
				if metaOf(st, didAlice)["url"] != "x" {
					t.Errorf("DID metadata lost with the session")
				}
			},
		},
		{Name: "same value again", Setup: fsmtest.With(world(), set("s-alice", "", "url", "x")), Cmd: set("s-alice", "", "url", "x"), Want: fsm.Result{Code: fsm.NoChange}},
		{
			Name: "delete a key", Setup: fsmtest.With(world(), set("s-alice", "", "url", "x")), Cmd: del("s-alice", "", "url"),
			Want: fsm.Result{Code: fsm.OK}, Events: []fsm.EventKind{EvChanged},
			Check: func(t *testing.T, st *fsm.State, _ int64) {
				if m := section.Of(st); m != nil && len(m.Owners) != 0 {
					t.Errorf("owners left: %v", m.Owners)
				}
			},
		},
		{Name: "delete a key not set", Setup: world(), Cmd: del("s-alice", "", "url"), Want: fsm.Result{Code: ErrKeyNotSet}},
		{Name: "invalid key", Setup: world(), Cmd: set("s-alice", "", "Bad Key", "x"), Want: fsm.Result{Code: fsm.ErrInvalid}},
		{Name: "upper case key", Setup: world(), Cmd: set("s-alice", "", "URL", "x"), Want: fsm.Result{Code: fsm.ErrInvalid}},
		{Name: "key too long", Setup: world(), Cmd: set("s-alice", "", strings.Repeat("k", MaxKeyLen+1), "x"), Want: fsm.Result{Code: fsm.ErrInvalid}},
		{Name: "value too long", Setup: world(), Cmd: set("s-alice", "", "url", strings.Repeat("v", MaxValueBytes+1)), Want: fsm.Result{Code: fsm.ErrInvalid}},
		{Name: "value at the limit", Setup: world(), Cmd: set("s-alice", "", "url", strings.Repeat("v", MaxValueBytes)), Want: fsm.Result{Code: fsm.OK}, Events: []fsm.EventKind{EvChanged}},
		{Name: "key limit", Setup: full, Cmd: set("s-alice", "", "one-more", "v"), Want: fsm.Result{Code: ErrLimit}},
		{Name: "key limit: changing a key still works", Setup: full, Cmd: set("s-alice", "", "k0", "w"), Want: fsm.Result{Code: fsm.OK}, Events: []fsm.EventKind{EvChanged}},
		{Name: "no session", Setup: world(), Cmd: set("s-gone", "", "url", "x"), Want: fsm.Result{Code: fsm.ErrNoSuchSession}},
		{
			Name: "a channel operator sets a channel key", Setup: withChan, Cmd: set("s-alice", "#c", "url", "https://c.example"),
			Want: fsm.Result{Code: fsm.OK}, Events: []fsm.EventKind{EvChanged},
			Check: func(t *testing.T, st *fsm.State, _ int64) {
				if metaOf(st, "#c")["url"] != "https://c.example" {
					t.Errorf("channel metadata %v", metaOf(st, "#c"))
				}
			},
		},
		{Name: "a member who is not an operator may not", Setup: withChan, Cmd: set("s-bob", "#c", "url", "x"), Want: fsm.Result{Code: ErrKeyNoPermission}},
		{Name: "no such channel", Setup: world(), Cmd: set("s-alice", "#none", "url", "x"), Want: fsm.Result{Code: fsm.ErrNoSuchChannel}},
		{
			Name: "a deleted channel's keys go with it", Setup: fsmtest.With(world(), fsm.Join{Session: "s-guest", Channel: "#g"}, set("s-guest", "#g", "url", "x")),
			Cmd: fsm.Part{Session: "s-guest", Channel: "#g"}, Want: fsm.Result{Code: fsm.OK}, Events: []fsm.EventKind{fsm.EvPart},
			Check: func(t *testing.T, st *fsm.State, _ int64) {
				if st.ChannelExists("#g") {
					t.Fatalf("the guest's channel was kept")
				}
				if m := metaOf(st, "#g"); m != nil {
					t.Errorf("metadata of a deleted channel kept: %v", m)
				}
			},
		},
		{
			Name: "clear", Setup: fsmtest.With(world(), set("s-alice", "", "b", "1"), set("s-alice", "", "a", "2")), Cmd: Clear{Session: "s-alice"},
			Want: fsm.Result{Code: fsm.OK, List: []string{"a", "b"}}, Events: []fsm.EventKind{EvChanged},
			Check: func(t *testing.T, st *fsm.State, _ int64) {
				if metaOf(st, didAlice) != nil {
					t.Errorf("keys left after CLEAR")
				}
			},
		},
		{Name: "clear nothing", Setup: world(), Cmd: Clear{Session: "s-alice"}, Want: fsm.Result{Code: fsm.NoChange}},
		{Name: "clear a channel without operator status", Setup: withChan, Cmd: Clear{Session: "s-bob", Channel: "#c"}, Want: fsm.Result{Code: ErrKeyNoPermission}},
	})
}

func TestValidKey(t *testing.T) {
	for key, want := range map[string]bool{
		"avatar": true, "display-name": true, "im.xmpp": true, "a/b_c": true, "k0": true,
		"": false, "Avatar": false, "has space": false, ":colon": false, "a:b": false, "é": false,
		strings.Repeat("k", MaxKeyLen): true, strings.Repeat("k", MaxKeyLen+1): false,
	} {
		if got := ValidKey(key); got != want {
			t.Errorf("ValidKey(%q) = %v, want %v", key, got, want)
		}
	}
}
