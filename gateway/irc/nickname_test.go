package irc

import (
	"iter"
	"maps"
	"testing"
	"time"
	"unicode"
)

func TestNickProblem(t *testing.T) {
	tests := []struct {
		nick string
		ok   bool
	}{
		{"victim", true},
		{"Alice", true},
		{"héllo", true},
		{"日本語", true},
		{"vict\u0456m", true},   // well-formed: the confusable check refuses it near an owned nick
		{"victim\u200b", false}, // zero-width space
		{"\u200dvictim", false}, // zero-width joiner
		{"ab\u202ecd", false},   // right-to-left override
		{"ab\u2066cd", false},   // left-to-right isolate
		{"a\u00a0b", false},     // no-break space
		{"\ufeffab", false},     // byte order mark
		{"a\u0085b", false},     // C1 next line
		{"a\u0007b", false},     // C0 bell
		{"ｆｕｌｌ", false},         // fullwidth forms
		{"\u01c5ab", false},     // a compatibility digraph
		{"a\U000e0041", false},  // tag character
		{"", false},
		{"#chan", false},
		{"did:plc:x", false},
	}
	for _, tt := range tests {
		if got := nickProblem(tt.nick) == ""; got != tt.ok {
			t.Errorf("nickProblem(%+q) accepted = %v, want %v (%s)", tt.nick, got, tt.ok, nickProblem(tt.nick))
		}
	}
}

func TestNickSkeletons(t *testing.T) {
	tests := []struct {
		a, b    string
		confuse bool
	}{
		{"victim", "vict\u0456m", true}, // Cyrillic i
		{"paypal", "p\u0430yp\u0430l", true},
		{"Victim", "victim", true},
		{"rn", "m", true},
		{"l1", "ll", true},
		{"alice", "bob", false},
		{"victim", "victims", false},
	}
	for _, tt := range tests {
		if got := nickSkeleton(tt.a) == nickSkeleton(tt.b); got != tt.confuse {
			t.Errorf("%+q vs %+q: confusable = %v, want %v", tt.a, tt.b, got, tt.confuse)
		}
	}
}

// FuzzNickProblem: an accepted nick is valid UTF-8 with no control, format or space characters,
// and its skeleton is computed without a panic.
func FuzzNickProblem(f *testing.F) {
	for _, s := range []string{"victim", "vict\u0456m", "a\u200bb", "ｆｕｌｌ", "日本語", "a\u0085"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, nick string) {
		_ = nickSkeleton(nick)
		if nickProblem(nick) != "" {
			return
		}
		for _, r := range nick {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.IsSpace(r) {
				t.Fatalf("accepted %+q with %U", nick, r)
			}
		}
	})
}

// TestSkeletonIndex: the index finds owned lookalikes, follows newly owned nicks, and is rebuilt
// after skeletonRebuild even when the number of owned nicks did not change.
func TestSkeletonIndex(t *testing.T) {
	st := ownedMap{"victim": "did:plc:victim"}
	var idx skeletons
	now := time.Unix(1_800_000_000, 0)
	if got := idx.candidates(st, nickSkeleton("vict\u0456m"), now); len(got) != 1 || got[0] != "victim" {
		t.Fatalf("candidates = %v, want [victim]", got)
	}
	st["paypal"] = "did:plc:paypal"
	if got := idx.candidates(st, nickSkeleton("p\u0430yp\u0430l"), now); len(got) != 1 || got[0] != "paypal" {
		t.Fatalf("after a new owned nick: candidates = %v, want [paypal]", got)
	}
	delete(st, "paypal")
	st["alice"] = "did:plc:alice" // same count: seen at the next rebuild
	if got := idx.candidates(st, nickSkeleton("\u0430lice"), now.Add(skeletonRebuild)); len(got) != 1 || got[0] != "alice" {
		t.Fatalf("after the rebuild interval: candidates = %v, want [alice]", got)
	}
}

// ownedMap is a folded nick → owner table standing in for the state's owned nicks.
type ownedMap map[string]string

func (m ownedMap) NickOwners() iter.Seq2[string, string] { return maps.All(m) }
func (m ownedMap) NickOwnerCount() int                   { return len(m) }
