package fsm

import (
	"fmt"
	"strings"
	"testing"
)

func TestApplyMetadata(t *testing.T) {
	set := func(session, channel, key, value string) SetMetadata {
		return SetMetadata{Session: session, Channel: channel, Key: key, Value: value}
	}
	del := func(session, channel, key string) SetMetadata {
		return SetMetadata{Session: session, Channel: channel, Key: key, Delete: true}
	}
	withChan := with(world(), Join{Session: "s-alice", Channel: "#c"}, Join{Session: "s-bob", Channel: "#c"})
	full := world()
	for i := 0; i < MaxMetadataKeys; i++ {
		full = append(full, set("s-alice", "", fmt.Sprintf("k%d", i), "v"))
	}
	metaOf := func(st *State, owner string) map[string]string { return st.Metadata(owner) }

	runApplyCases(t, []applyCase{
		{
			name: "a user sets its own key under its DID", setup: world(), cmd: set("s-alice", "", "avatar", "https://a.example/me.png"),
			want: Result{Code: OK}, events: []EventKind{EvMetadata},
			check: func(t *testing.T, st *State, _ int64) {
				if got := metaOf(st, didAlice)["avatar"]; got != "https://a.example/me.png" {
					t.Errorf("avatar %q", got)
				}
			},
		},
		{
			name: "a guest's keys belong to its session and end with it", setup: with(world(), set("s-guest", "", "url", "x")),
			cmd: EndSession{Session: "s-guest", Reason: "bye"}, want: Result{Code: OK}, events: []EventKind{EvQuit},
			check: func(t *testing.T, st *State, _ int64) {
				if m := metaOf(st, "session:s-guest"); m != nil {
					t.Errorf("guest metadata outlived the session: %v", m)
				}
			},
		},
		{
			name: "a DID's keys outlive its session", setup: with(world(), set("s-alice", "", "url", "x")),
			cmd: EndSession{Session: "s-alice", Reason: "bye"}, want: Result{Code: OK}, events: []EventKind{EvQuit},
			check: func(t *testing.T, st *State, _ int64) {
				if metaOf(st, didAlice)["url"] != "x" {
					t.Errorf("DID metadata lost with the session")
				}
			},
		},
		{name: "same value again", setup: with(world(), set("s-alice", "", "url", "x")), cmd: set("s-alice", "", "url", "x"), want: Result{Code: NoChange}},
		{
			name: "delete a key", setup: with(world(), set("s-alice", "", "url", "x")), cmd: del("s-alice", "", "url"),
			want: Result{Code: OK}, events: []EventKind{EvMetadata},
			check: func(t *testing.T, st *State, _ int64) {
				if st.metadata != nil && len(st.metadata.Owners) != 0 {
					t.Errorf("owners left: %v", st.metadata.Owners)
				}
			},
		},
		{name: "delete a key not set", setup: world(), cmd: del("s-alice", "", "url"), want: Result{Code: ErrKeyNotSet}},
		{name: "invalid key", setup: world(), cmd: set("s-alice", "", "Bad Key", "x"), want: Result{Code: ErrInvalid}},
		{name: "upper case key", setup: world(), cmd: set("s-alice", "", "URL", "x"), want: Result{Code: ErrInvalid}},
		{name: "key too long", setup: world(), cmd: set("s-alice", "", strings.Repeat("k", MaxMetadataKeyLen+1), "x"), want: Result{Code: ErrInvalid}},
		{name: "value too long", setup: world(), cmd: set("s-alice", "", "url", strings.Repeat("v", MaxMetadataValueBytes+1)), want: Result{Code: ErrInvalid}},
		{name: "value at the limit", setup: world(), cmd: set("s-alice", "", "url", strings.Repeat("v", MaxMetadataValueBytes)), want: Result{Code: OK}, events: []EventKind{EvMetadata}},
		{name: "key limit", setup: full, cmd: set("s-alice", "", "one-more", "v"), want: Result{Code: ErrMetadataLimit}},
		{name: "key limit: changing a key still works", setup: full, cmd: set("s-alice", "", "k0", "w"), want: Result{Code: OK}, events: []EventKind{EvMetadata}},
		{name: "no session", setup: world(), cmd: set("s-gone", "", "url", "x"), want: Result{Code: ErrNoSuchSession}},
		{
			name: "a channel operator sets a channel key", setup: withChan, cmd: set("s-alice", "#c", "url", "https://c.example"),
			want: Result{Code: OK}, events: []EventKind{EvMetadata},
			check: func(t *testing.T, st *State, _ int64) {
				if metaOf(st, "#c")["url"] != "https://c.example" {
					t.Errorf("channel metadata %v", metaOf(st, "#c"))
				}
			},
		},
		{name: "a member who is not an operator may not", setup: withChan, cmd: set("s-bob", "#c", "url", "x"), want: Result{Code: ErrKeyNoPermission}},
		{name: "no such channel", setup: world(), cmd: set("s-alice", "#none", "url", "x"), want: Result{Code: ErrNoSuchChannel}},
		{
			name: "a deleted channel's keys go with it", setup: with(world(), Join{Session: "s-guest", Channel: "#g"}, set("s-guest", "#g", "url", "x")),
			cmd: Part{Session: "s-guest", Channel: "#g"}, want: Result{Code: OK}, events: []EventKind{EvPart},
			check: func(t *testing.T, st *State, _ int64) {
				if st.channels["#g"] != nil {
					t.Fatalf("the guest's channel was kept")
				}
				if m := metaOf(st, "#g"); m != nil {
					t.Errorf("metadata of a deleted channel kept: %v", m)
				}
			},
		},
		{
			name: "clear", setup: with(world(), set("s-alice", "", "b", "1"), set("s-alice", "", "a", "2")), cmd: ClearMetadata{Session: "s-alice"},
			want: Result{Code: OK, List: []string{"a", "b"}}, events: []EventKind{EvMetadata},
			check: func(t *testing.T, st *State, _ int64) {
				if metaOf(st, didAlice) != nil {
					t.Errorf("keys left after CLEAR")
				}
			},
		},
		{name: "clear nothing", setup: world(), cmd: ClearMetadata{Session: "s-alice"}, want: Result{Code: NoChange}},
		{name: "clear a channel without operator status", setup: withChan, cmd: ClearMetadata{Session: "s-bob", Channel: "#c"}, want: Result{Code: ErrKeyNoPermission}},
	})
}

func TestValidMetadataKey(t *testing.T) {
	for key, want := range map[string]bool{
		"avatar": true, "display-name": true, "im.xmpp": true, "a/b_c": true, "k0": true,
		"": false, "Avatar": false, "has space": false, ":colon": false, "a:b": false, "é": false,
		strings.Repeat("k", MaxMetadataKeyLen): true, strings.Repeat("k", MaxMetadataKeyLen+1): false,
	} {
		if got := ValidMetadataKey(key); got != want {
			t.Errorf("ValidMetadataKey(%q) = %v, want %v", key, got, want)
		}
	}
}
