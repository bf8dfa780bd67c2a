package eventstore

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
)

func TestSearch(t *testing.T) {
	s, _ := openTestStore(t, true)
	ctx := context.Background()
	sec := time.Second
	s7 := newMsg("s7", "#s", at(7*sec), "original text")
	mustAppend(t, s,
		newMsg("s1", "#s", at(1*sec), "hello world"),
		newMsg("s2", "#s", at(2*sec), "hello AND goodbye"),
		newMsg("s3", "#s", at(3*sec), `she said "quoted" words`),
		newMsg("s4", "#s", at(4*sec), "wild* card"),
		newMsg("s5", "#s", at(5*sec), "minus -sign here"),
		newMsg("s6", "#s", at(6*sec), "NEAR(x y) function"),
		s7,
		newMsg("s8", "#s", at(8*sec), "doomed hello"),
		newMsg("s9", "#elsewhere", at(9*sec), "hello again"),
		newMsg("s10", "#s", at(10*sec), "Héllo late"),
		newMsg("s11", "#s", at(10*sec), "tie hello"),
	)
	mustAppend(t, s, newEdit("e7", "s7", s7, at(20*sec), "revised text"))
	if err := s.Delete(ctx, "s8", at(30*sec)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		query      string
		beforeUnix int64
		limit      int
		want       []string
		wantErr    error
	}{
		{"hello", 0, 10, []string{"s11", "s10", "s2", "s1"}, nil},
		{"HELLO", 0, 10, []string{"s11", "s10", "s2", "s1"}, nil},
		{"hello", 0, 2, []string{"s11", "s10"}, nil},
		{"hello", at(10 * sec).Unix(), 10, []string{"s2", "s1"}, nil},
		{"hello", at(2 * sec).Unix(), 10, []string{"s1"}, nil},
		{"hello world", 0, 10, []string{"s1"}, nil},
		{"world hello", 0, 10, []string{"s1"}, nil},
		{"  world \t hello\n", 0, 10, []string{"s1"}, nil},
		{"AND", 0, 10, []string{"s2"}, nil},
		{"hello AND", 0, 10, []string{"s2"}, nil},
		{"hello OR world", 0, 10, nil, nil},
		{"OR", 0, 10, nil, nil},
		{"NOT", 0, 10, nil, nil},
		{`"quoted"`, 0, 10, []string{"s3"}, nil},
		{`said "quoted`, 0, 10, []string{"s3"}, nil},
		{`"said quoted"`, 0, 10, []string{"s3"}, nil}, // two terms, not one phrase
		{`"`, 0, 10, nil, nil},
		{"wild*", 0, 10, []string{"s4"}, nil},
		{"wil*", 0, 10, nil, nil}, // no prefix search: * is literal
		{"*", 0, 10, nil, nil},
		{"-sign", 0, 10, []string{"s5"}, nil},
		{"minus -sign", 0, 10, []string{"s5"}, nil},
		{"-", 0, 10, nil, nil},
		{"hello -world", 0, 10, []string{"s1"}, nil}, // - is not NOT: s1 holds both words
		{"NEAR(x", 0, 10, []string{"s6"}, nil},
		{"NEAR(x y)", 0, 10, []string{"s6"}, nil},
		{"NEAR(hello world)", 0, 10, nil, nil},
		{"text:revised", 0, 10, nil, nil}, // not a column filter: the phrase "text revised" does not occur
		{"revised:text", 0, 10, []string{"s7"}, nil},
		{"{text}: x", 0, 10, nil, nil}, // not a column filter: no message holds both "text" and "x"
		{"^hello", 0, 10, []string{"s11", "s10", "s2", "s1"}, nil},
		{"original", 0, 10, nil, nil}, // superseded revision
		{"revised", 0, 10, []string{"s7"}, nil},
		{"doomed", 0, 10, nil, nil}, // deleted
		{"again", 0, 10, nil, nil},  // other venue
		{"", 0, 10, nil, nil},
		{"   ", 0, 10, nil, nil},
		{"hello", 0, 0, nil, ErrInvalidArgument},
		{"hello", -1, 10, nil, ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			got, err := s.Search(ctx, "#s", tt.query, tt.beforeUnix, tt.limit)
			wantIDs(t, got, err, tt.want, tt.wantErr)
			for _, m := range got {
				if m.MsgID == "s7" && (m.Text != "revised text" || m.Revision != "e7") {
					t.Fatalf("edited hit = %+v", m)
				}
			}
		})
	}
}

func TestFTSQuery(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"hello", `"hello"`, true},
		{"hello world", `"hello" AND "world"`, true},
		{`say "hi"`, `"say" AND """hi"""`, true},
		{"NEAR(a b)", `"NEAR(a" AND "b)"`, true},
		{"a* -b", `"a*" AND "-b"`, true},
		{"- * ( )", "", false},
		{"", "", false},
		{"x\x00y", `"x" AND "y"`, true},
		{"x\xffy", `"x" AND "y"`, true},
		{"日本語 text", `"日本語" AND "text"`, true},
	}
	for _, tt := range tests {
		got, ok := ftsQuery(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ftsQuery(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzSearchQuery checks the sanitizer end to end: whatever the input, the MATCH expression is
// valid FTS5, and a message whose text is the input is found by searching for the input (the
// terms are literal phrases, so the text always matches its own query).
func FuzzSearchQuery(f *testing.F) {
	for _, seed := range []string{
		"hello", "hello world", `"quoted"`, `a"b`, `""`, "AND", "OR NOT", "NEAR(a b, 3)", "a* b*", "-x",
		"col:x", "{a b}: c", "^start", "+x", "(a OR b)", "x\x00y", "\xff\xfe", "日本語", "émoji 🎉 ok",
		strings.Repeat("ab ", 50),
	} {
		f.Add(seed)
	}
	s, _ := openTestStore(f, true)
	ctx := context.Background()
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, query string) {
		match, ok := ftsQuery(query)
		if ok && (!utf8.ValidString(match) || strings.ContainsRune(match, 0)) {
			t.Fatalf("ftsQuery(%q) = %q: not valid text", query, match)
		}
		i := n.Add(1)
		id := "fuzz-" + time.Duration(i).String()
		if err := s.Append(ctx, newMsg(id, "#fuzz", at(time.Duration(i)*time.Millisecond), query)); err != nil {
			t.Fatalf("Append: %v", err)
		}
		got, err := s.Search(ctx, "#fuzz", query, 0, 1)
		if err != nil {
			t.Fatalf("Search(%q) via %q: %v", query, match, err)
		}
		if !ok {
			if len(got) != 0 {
				t.Fatalf("Search(%q) without terms returned %v", query, ids(got))
			}
			return
		}
		if !utf8.ValidString(query) || strings.ContainsRune(query, 0) {
			return // the sanitizer split the query where the indexed text was not split
		}
		if len(got) != 1 || got[0].MsgID != id {
			t.Fatalf("Search(%q) via %q = %v, want [%s]", query, match, ids(got), id)
		}
	})
}

func TestSearchClosed(t *testing.T) {
	s, _ := openTestStore(t, true)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Search(context.Background(), "#s", "x", 0, 5); !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v", err)
	}
}
