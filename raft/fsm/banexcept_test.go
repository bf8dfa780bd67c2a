package fsm

import (
	"fmt"
	"testing"
)

// TestBanExceptions covers +e: the list itself (privileges, the 500-entry cap) and that a matching
// exception lets a banned user join; the mute entry (m:mask) does not stop a join.
func TestBanExceptions(t *testing.T) {
	base := with(world(), Join{Session: "s-alice", Channel: "#c"})
	banned := with(base, modes("s-alice", "#c", add("b", "*!*@host-s-guest"), add("b", didBob)))
	fullE := make([]ModeChange, MaxListEntries)
	for i := range fullE {
		fullE[i] = add("e", fmt.Sprintf("n%d!*@*", i))
	}
	cases := []applyCase{
		{name: "+e adds an entry", setup: base, cmd: modes("s-alice", "#c", add("e", "*!*@host-s-guest")),
			want: Result{Code: OK, Applied: []ModeChange{add("e", "*!*@host-s-guest")}}, events: []EventKind{EvMode},
			check: chanCheck(func(t *testing.T, c *Channel) {
				if len(c.BanExceptions) != 1 || c.BanExceptions[0].SetBy == "" || len(c.Bans) != 0 || len(c.Exceptions) != 0 {
					t.Fatalf("+e lists: e %v b %v I %v", c.BanExceptions, c.Bans, c.Exceptions)
				}
			})},
		{name: "only operators set +e", setup: with(base, Join{Session: "s-bob", Channel: "#c"}), cmd: modes("s-bob", "#c", add("e", "*!*@*")),
			want: Result{Code: ErrChanOpNeeded, Failed: []ModeFailure{{Change: add("e", "*!*@*"), Code: ErrChanOpNeeded}}}},
		{name: "a full +e list refuses one more", setup: with(base, modes("s-alice", "#c", fullE...)), cmd: modes("s-alice", "#c", add("e", "one!*@*")),
			want: Result{Code: ErrListFull, Failed: []ModeFailure{{Change: add("e", "one!*@*"), Code: ErrListFull}}}},
		{name: "-e removes it", setup: with(base, modes("s-alice", "#c", add("e", "x!*@*"))), cmd: modes("s-alice", "#c", del("e", "X!*@*")),
			want: Result{Code: OK, Applied: []ModeChange{del("e", "X!*@*")}}, events: []EventKind{EvMode}},
		{name: "a banned user is refused", setup: banned, cmd: Join{Session: "s-guest", Channel: "#c"}, want: Result{Code: ErrBanned}},
		{name: "a hostmask exception lets a banned user join", setup: with(banned, modes("s-alice", "#c", add("e", "guest!*@*"))),
			cmd: Join{Session: "s-guest", Channel: "#c"}, want: Result{Code: OK, Member: &Member{}}, events: []EventKind{EvJoin}},
		{name: "a DID exception lifts a DID ban", setup: with(banned, modes("s-alice", "#c", add("e", didBob))),
			cmd: Join{Session: "s-bob", Channel: "#c"}, want: Result{Code: OK, Member: &Member{}}, events: []EventKind{EvJoin}},
		{name: "an exception for someone else lifts nothing", setup: with(banned, modes("s-alice", "#c", add("e", didAlice))),
			cmd: Join{Session: "s-bob", Channel: "#c"}, want: Result{Code: ErrBanned}},
		{name: "an invite exception does not lift a ban", setup: with(banned, modes("s-alice", "#c", add("I", "guest!*@*"))),
			cmd: Join{Session: "s-guest", Channel: "#c"}, want: Result{Code: ErrBanned}},
		{name: "a mute entry does not stop a join", setup: with(base, modes("s-alice", "#c", add("b", "m:*!*@*"))),
			cmd: Join{Session: "s-guest", Channel: "#c"}, want: Result{Code: OK, Member: &Member{}}, events: []EventKind{EvJoin}},
	}
	runApplyCases(t, cases)
}

func TestIsMuted(t *testing.T) {
	cases := []struct {
		name      string
		bans, exc []string
		hostmask  string
		did       string
		muted     bool
		banned    bool
	}{
		{name: "no entries", hostmask: "a!u@h"},
		{name: "a mute glob", bans: []string{"m:*!*@h"}, hostmask: "a!u@h", muted: true},
		{name: "upper-case prefix", bans: []string{"M:A!*@*"}, hostmask: "a!u@h", muted: true},
		{name: "a mute DID", bans: []string{"m:did:plc:x"}, hostmask: "a!u@h", did: "did:plc:x", muted: true},
		{name: "a mute DID needs the DID", bans: []string{"m:did:plc:x"}, hostmask: "a!u@h"},
		{name: "another host", bans: []string{"m:*!*@other"}, hostmask: "a!u@h"},
		{name: "lifted by +e", bans: []string{"m:*!*@*"}, exc: []string{"a!*@*"}, hostmask: "a!u@h"},
		{name: "lifted by +e in the mute form", bans: []string{"m:*!*@*"}, exc: []string{"m:*!u@*"}, hostmask: "a!u@h"},
		{name: "+e in the mute form does not lift a ban", bans: []string{"*!*@h"}, exc: []string{"m:*!u@*"}, hostmask: "a!u@h", banned: true},
		{name: "a plain ban is no mute", bans: []string{"*!*@h"}, hostmask: "a!u@h", banned: true},
		{name: "a bare prefix is a plain mask", bans: []string{"m:"}, hostmask: "a!u@h"},
		{name: "a ban lifted by +e", bans: []string{"*!*@h"}, exc: []string{"did:plc:x"}, hostmask: "a!u@h", did: "did:plc:x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &Channel{}
			for _, m := range tc.bans {
				c.Bans = append(c.Bans, ListEntry{Mask: m})
			}
			for _, m := range tc.exc {
				c.BanExceptions = append(c.BanExceptions, ListEntry{Mask: m})
			}
			if got := c.IsMuted(tc.hostmask, tc.did); got != tc.muted {
				t.Errorf("IsMuted = %v, want %v", got, tc.muted)
			}
			if got := c.IsBanned(tc.hostmask, tc.did); got != tc.banned {
				t.Errorf("IsBanned = %v, want %v", got, tc.banned)
			}
		})
	}
}
