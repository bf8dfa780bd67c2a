package confusable

import (
	"slices"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
)

func TestSkeletons(t *testing.T) {
	tests := []struct {
		a, b    string
		confuse bool
	}{
		{"victim", "vict\u0456m", true}, // Cyrillic i
		{"paypal", "p\u0430yp\u0430l", true},
		{"paypal", "paypaI", true}, // capital I before folding
		{"Victim", "victim", true},
		{"rn", "m", true},
		{"l1", "ll", true},
		{"alice", "bob", false},
		{"victim", "victims", false},
	}
	for _, tt := range tests {
		sa, sb := skeletonsOf(tt.a, Skeleton), skeletonsOf(tt.b, Skeleton)
		got := slices.ContainsFunc(sa, func(s string) bool { return slices.Contains(sb, s) })
		if got != tt.confuse {
			t.Errorf("%+q %q vs %+q %q: confusable = %v, want %v", tt.a, sa, tt.b, sb, got, tt.confuse)
		}
	}
}

func TestLookAlike(t *testing.T) {
	fx := fsm.NewFixture()
	fx.SetNickOwner("paypal", "did:plc:pay")
	fx.AddSession(fsm.Session{ID: "s1", Nick: "victim"})
	fx.AddSession(fsm.Session{ID: "s2", Nick: "Bob", DID: "did:plc:bob"})
	st := fx.State()
	var x Index
	notSelf := func(session, did string) func(Holder) bool {
		return func(h Holder) bool { return h.Session == session || (did != "" && h.DID == did) }
	}
	tests := []struct {
		name    string
		nick    string
		skip    func(Holder) bool
		wantHit string
	}{
		{"a guest's nick in use", "vict\u0456m", nil, "victim"},
		{"capital I against an owned nick", "paypaI", nil, "paypal"},
		{"Cyrillic capital, seen after folding", "VICT\u0406M", nil, "victim"},
		{"the exact nick is not a look-alike", "VICTIM", nil, ""},
		{"the session itself", "vict\u0456m", notSelf("s1", ""), ""},
		{"the same DID", "B0b", notSelf("s9", "did:plc:bob"), ""},
		{"another DID", "B0b", notSelf("s9", "did:plc:eve"), "Bob"},
		{"unrelated", "carol", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, ok := x.LookAlike(st, tt.nick, tt.skip)
			if ok != (tt.wantHit != "") || h.Nick != tt.wantHit {
				t.Fatalf("LookAlike(%+q) = %+v %v, want %q", tt.nick, h, ok, tt.wantHit)
			}
		})
	}
}

// FuzzSkeleton: any string has a skeleton, computed without a panic, and equal strings agree.
func FuzzSkeleton(f *testing.F) {
	for _, s := range []string{"victim", "vict\u0456m", "paypaI", "\xff", "日本語"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, nick string) {
		if Skeleton(nick) != Skeleton(nick) {
			t.Fatalf("Skeleton(%+q) is not stable", nick)
		}
	})
}
