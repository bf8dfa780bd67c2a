package confusable

import (
	"iter"
	"maps"
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

// fakeState stands in for the state: sessions, owned nicks and an index bumped on each change.
type fakeState struct {
	index    uint64
	sessions map[string]fsm.Session
	owned    map[string]string
}

func (f *fakeState) Index() uint64                         { return f.index }
func (f *fakeState) Sessions() iter.Seq[fsm.Session]       { return maps.Values(f.sessions) }
func (f *fakeState) NickOwners() iter.Seq2[string, string] { return maps.All(f.owned) }

func TestLookAlike(t *testing.T) {
	st := &fakeState{index: 1, owned: map[string]string{"paypal": "did:plc:pay"},
		sessions: map[string]fsm.Session{"s1": {ID: "s1", Nick: "victim"}, "s2": {ID: "s2", Nick: "Bob", DID: "did:plc:bob"}}}
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
	// A rename another node applied: seen once the state's index moved on.
	renamed := st.sessions["s1"]
	renamed.Nick = "mallory"
	st.sessions["s1"] = renamed
	st.index++
	if h, ok := x.LookAlike(st, "vict\u0456m", nil); ok {
		t.Fatalf("after the rename: %+v", h)
	}
	if h, ok := x.LookAlike(st, "ma11ory", nil); !ok || h.Session != "s1" {
		t.Fatalf("after the rename: %+v %v, want s1", h, ok)
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
