package irc

import (
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
)

func TestSplitStatus(t *testing.T) {
	cases := []struct{ target, status, channel string }{
		{"@#c", "@", "#c"},
		{"%&c", "%", "&c"},
		{"+#c", "+", "#c"},
		{"#c", "", "#c"},
		{"@", "", "@"},
		{"@#", "", "@#"},
		{"~#c", "", "~#c"},
		{"@nick", "", "@nick"},
		{"@@#c", "", "@@#c"},
	}
	for _, tc := range cases {
		if s, ch := splitStatus(tc.target); s != tc.status || ch != tc.channel {
			t.Errorf("splitStatus(%q) = %q %q, want %q %q", tc.target, s, ch, tc.status, tc.channel)
		}
	}
}

func TestStatusRanks(t *testing.T) {
	cases := []struct {
		status string
		member fsm.Member
		gets   bool
	}{
		{"@", fsm.Member{Op: true}, true},
		{"@", fsm.Member{HalfOp: true, Voice: true}, false},
		{"%", fsm.Member{HalfOp: true}, true},
		{"%", fsm.Member{Voice: true}, false},
		{"+", fsm.Member{Voice: true}, true},
		{"+", fsm.Member{Op: true}, true},
		{"+", fsm.Member{}, false},
		{"", fsm.Member{}, true},
		{"+", fsm.Member{}, false},
	}
	for _, tc := range cases {
		if got := memberRank(tc.member) >= statusRank(tc.status); got != tc.gets {
			t.Errorf("status %q member %+v: gets %v, want %v", tc.status, tc.member, got, tc.gets)
		}
	}
}
