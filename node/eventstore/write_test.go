package eventstore

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestOpenRefusesNonFiles(t *testing.T) {
	for _, path := range []string{"", ":memory:", "file::memory:?cache=shared", "file:x.db"} {
		if _, err := Open(context.Background(), Options{Path: path, Logger: quietLogger}); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Open(%q) err = %v, want ErrInvalidArgument", path, err)
		}
	}
}

func TestOpenCreatesDirectoryAndOddNames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub dir", "events?#%.db")
	s, err := Open(context.Background(), Options{Path: path, NoSync: true, Logger: quietLogger})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	mustAppend(t, s, newMsg("a", "#c", t0, "x"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := filepath.Glob(path); err != nil {
		t.Fatal(err)
	}
	s, err = Open(context.Background(), Options{Path: path, NoSync: true, Logger: quietLogger})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	if ok, err := s.Has(context.Background(), "a"); !ok || err != nil {
		t.Fatalf("Has after reopen = %v, %v", ok, err)
	}
}

func TestAppendValidation(t *testing.T) {
	s, _ := openTestStore(t, true)
	valid := func() *Message { return newMsg("v", "#c", t0, "x") }
	tests := []struct {
		name   string
		mutate func(*Message)
	}{
		{"no msgid", func(m *Message) { m.MsgID = "" }},
		{"no venue", func(m *Message) { m.Venue = "" }},
		{"bad command", func(m *Message) { m.Command = "JOIN" }},
		{"no time", func(m *Message) { m.Time = time.Time{} }},
		{"replaces itself", func(m *Message) { m.ReplacesMsgID = m.MsgID }},
		{"time too late", func(m *Message) { m.Time = time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"time too early", func(m *Message) { m.Time = time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := valid()
			tt.mutate(bad)
			good := newMsg("good-"+tt.name, "#c", t0, "x")
			if err := s.Append(context.Background(), good, bad); !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("err = %v, want ErrInvalidArgument", err)
			}
			if ok, _ := s.Has(context.Background(), good.MsgID); ok {
				t.Fatal("a call with an invalid message stored its valid one")
			}
		})
	}
	if err := s.Append(context.Background(), nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("nil message: err = %v", err)
	}
	if err := s.Append(context.Background()); err != nil {
		t.Fatalf("empty Append: %v", err)
	}
}

func TestAppendDuplicates(t *testing.T) {
	s, _ := openTestStore(t, true)
	ctx := context.Background()
	first := newMsg("a", "#c", t0, "first")
	mustAppend(t, s, first)
	if first.Seq == 0 {
		t.Fatal("Seq not filled in")
	}
	again := newMsg("a", "#c", t0, "second copy")
	fresh := newMsg("b", "#c", t0, "fresh")
	twice := newMsg("b", "#c", t0, "same call")
	err := s.Append(ctx, again, fresh, twice)
	if !errors.Is(err, ErrDuplicate) {
		t.Fatalf("err = %v, want ErrDuplicate", err)
	}
	if again.Seq != 0 || twice.Seq != 0 || fresh.Seq <= first.Seq {
		t.Fatalf("seqs: again %d, fresh %d, twice %d (first %d)", again.Seq, fresh.Seq, twice.Seq, first.Seq)
	}
	got, err := s.Get(ctx, "a")
	if err != nil || got.Text != "first" {
		t.Fatalf("Get a = %+v, %v; the duplicate overwrote the original", got, err)
	}
	if n, _ := s.Count(ctx); n != 2 {
		t.Fatalf("Count = %d, want 2", n)
	}
}

func TestGetRoundTrip(t *testing.T) {
	s, _ := openTestStore(t, true)
	ctx := context.Background()
	in := newMsg("01J0000000000000000000000A", "dm:did:plc:a,did:plc:b", time.Date(2026, 3, 4, 5, 6, 7, 891_234_567, time.FixedZone("x", 3600)), "héllo\nworld")
	in.Command = "NOTICE"
	in.SenderDID = ""
	in.Tags = map[string]string{"+reply": "abc", "+freeq.at/sig": "s;i g\\"}
	mustAppend(t, s, in)
	got, err := s.Get(ctx, in.MsgID)
	if err != nil {
		t.Fatal(err)
	}
	want := *in
	want.Time = in.Time.Truncate(time.Millisecond).UTC()
	if got.Seq != want.Seq || got.MsgID != want.MsgID || got.Venue != want.Venue || got.Command != want.Command ||
		got.Sender != want.Sender || got.SenderNick != want.SenderNick || got.SenderDID != want.SenderDID ||
		got.Text != want.Text || !maps.Equal(got.Tags, want.Tags) || !got.Time.Equal(want.Time) ||
		got.Time.Location() != time.UTC || got.Origin != want.Origin || !got.DeletedAt.IsZero() || got.Revision != "" {
		t.Fatalf("Get = %+v\nwant %+v", got, want)
	}
	noTags := newMsg("t", "#c", t0, "x")
	noTags.Tags = nil
	mustAppend(t, s, noTags)
	if got, _ := s.Get(ctx, "t"); got.Tags != nil {
		t.Fatalf("tags of an untagged message = %v", got.Tags)
	}
	if _, err := s.Get(ctx, "missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get missing: %v", err)
	}
	if ok, err := s.Has(ctx, "missing"); ok || err != nil {
		t.Fatalf("Has missing = %v, %v", ok, err)
	}
}

func TestEditsAndDeletes(t *testing.T) {
	ctx := context.Background()
	type step func(t *testing.T, s *Store)
	appendMsgs := func(msgs ...*Message) step {
		return func(t *testing.T, s *Store) { mustAppend(t, s, msgs...) }
	}
	del := func(msgid string, wantErr error) step {
		return func(t *testing.T, s *Store) {
			if err := s.Delete(ctx, msgid, at(time.Minute)); !errors.Is(err, wantErr) {
				t.Fatalf("Delete(%s) = %v, want %v", msgid, err, wantErr)
			}
		}
	}
	deleteViaRoot := func(msgid string) step {
		return func(t *testing.T, s *Store) {
			root, err := s.Root(ctx, msgid)
			if err != nil {
				t.Fatalf("Root(%s): %v", msgid, err)
			}
			if err := s.Delete(ctx, root.MsgID, at(time.Minute)); err != nil {
				t.Fatalf("Delete(%s): %v", root.MsgID, err)
			}
		}
	}
	root := newMsg("r", "#c", at(0), "original")
	tests := []struct {
		name     string
		steps    []step
		wantLive bool   // r is in the views
		wantText string // r's text in the views
		wantRev  string
	}{
		{"no edit", []step{appendMsgs(root)}, true, "original", ""},
		{"edited twice", []step{appendMsgs(root),
			appendMsgs(newEdit("e1", "r", root, at(time.Second), "first edit")),
			appendMsgs(newEdit("e2", "r", root, at(2*time.Second), "second edit"))}, true, "second edit", "e2"},
		{"edit of an edit", []step{appendMsgs(root, newEdit("e1", "r", root, at(time.Second), "first edit")),
			appendMsgs(newEdit("e2", "e1", root, at(2*time.Second), "second edit"))}, true, "second edit", "e2"},
		{"edits in the root's batch", []step{appendMsgs(root,
			newEdit("e1", "r", root, at(time.Second), "first edit"),
			newEdit("e2", "r", root, at(2*time.Second), "second edit"))}, true, "second edit", "e2"},
		{"older edit arriving late loses", []step{appendMsgs(root),
			appendMsgs(newEdit("e2", "r", root, at(2*time.Second), "second edit")),
			appendMsgs(newEdit("e1", "r", root, at(time.Second), "first edit"))}, true, "second edit", "e2"},
		{"same-millisecond edits: later arrival wins", []step{appendMsgs(root),
			appendMsgs(newEdit("e1", "r", root, at(time.Second), "first edit")),
			appendMsgs(newEdit("e2", "r", root, at(time.Second), "second edit"))}, true, "second edit", "e2"},
		{"edits before their root", []step{
			appendMsgs(newEdit("e2", "r", root, at(2*time.Second), "second edit")),
			appendMsgs(newEdit("e1", "r", root, at(time.Second), "first edit")),
			appendMsgs(root)}, true, "second edit", "e2"},
		{"deleted root", []step{appendMsgs(root), del("r", nil)}, false, "", ""},
		{"delete twice is a no-op", []step{appendMsgs(root), del("r", nil), del("r", nil)}, false, "", ""},
		{"delete unknown", []step{appendMsgs(root), del("nope", ErrNotFound)}, true, "original", ""},
		{"delete by an edit's msgid via Root", []step{appendMsgs(root),
			appendMsgs(newEdit("e1", "r", root, at(time.Second), "first edit")),
			appendMsgs(newEdit("e2", "r", root, at(2*time.Second), "second edit")),
			deleteViaRoot("e2")}, false, "", ""},
		{"delete by an edit's msgid directly", []step{appendMsgs(root),
			appendMsgs(newEdit("e1", "r", root, at(time.Second), "first edit")),
			del("e1", nil)}, false, "", ""},
		{"edit after delete stays deleted", []step{appendMsgs(root), del("r", nil),
			appendMsgs(newEdit("e1", "r", root, at(time.Second), "first edit"))}, false, "", ""},
		{"delete of an orphan edit", []step{appendMsgs(newEdit("e1", "r", root, at(time.Second), "first edit")),
			del("e1", ErrNotFound), appendMsgs(root)}, true, "first edit", "e1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := openTestStore(t, true)
			mustAppend(t, s, newMsg("before", "#c", at(-time.Second), "neighbour"), newMsg("after", "#c", at(time.Hour), "neighbour"))
			for _, st := range tt.steps {
				st(t, s)
			}
			views := map[string]func() ([]Message, error){
				"Before": func() ([]Message, error) { return s.Before(ctx, "#c", Bound{}, 10) },
				"After":  func() ([]Message, error) { return s.After(ctx, "#c", Bound{}, 10) },
				"Latest": func() ([]Message, error) { return s.Latest(ctx, "#c", Bound{}, 10) },
				"Around": func() ([]Message, error) { return s.Around(ctx, "#c", Bound{MsgID: "before"}, 10) },
				"Page":   func() ([]Message, error) { return s.PageBeforeUnix(ctx, "#c", 0, 10) },
				"Export": func() ([]Message, error) { return s.ExportAfter(ctx, "#c", 0, 10) },
			}
			for name, view := range views {
				got, err := view()
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				checkCurrentForm(t, name, got, tt.wantLive, tt.wantText, tt.wantRev)
			}
			for _, term := range []string{"original", "first", "second", "edit"} {
				got, err := s.Search(ctx, "#c", term, 0, 10)
				if err != nil {
					t.Fatalf("Search %q: %v", term, err)
				}
				wantHit := tt.wantLive && containsWord(tt.wantText, term)
				if (len(got) == 1) != wantHit || len(got) > 1 {
					t.Fatalf("Search %q = %v, want hit %v", term, ids(got), wantHit)
				}
				if wantHit {
					checkCurrentForm(t, "Search "+term, got, true, tt.wantText, tt.wantRev)
				}
			}
			cur, err := s.Current(ctx, "r")
			if tt.wantLive != (err == nil) || (err != nil && !errors.Is(err, ErrNotFound)) {
				t.Fatalf("Current(r) = %+v, %v", cur, err)
			}
			raw, err := s.Get(ctx, "r")
			if err != nil {
				t.Fatalf("Get(r): %v", err)
			}
			if raw.Text != "original" || raw.Revision != "" || raw.DeletedAt.IsZero() == !tt.wantLive {
				t.Fatalf("raw root = %+v", raw)
			}
			for _, editID := range []string{"e1", "e2"} {
				edit, err := s.Get(ctx, editID)
				if errors.Is(err, ErrNotFound) {
					continue
				}
				if err != nil || edit.ReplacesMsgID != "r" || edit.DeletedAt.IsZero() == !tt.wantLive {
					t.Fatalf("raw edit %s = %+v, %v", editID, edit, err)
				}
				if r, err := s.Root(ctx, editID); err != nil || r.MsgID != "r" {
					t.Fatalf("Root(%s) = %s, %v", editID, r.MsgID, err)
				}
			}
		})
	}
}

// checkCurrentForm checks that a view holds the neighbours and, when live, r in its current form.
func checkCurrentForm(t *testing.T, view string, got []Message, live bool, text, rev string) {
	t.Helper()
	var r *Message
	for i := range got {
		if got[i].ReplacesMsgID != "" || got[i].MsgID == "e1" || got[i].MsgID == "e2" {
			t.Fatalf("%s returned an edit row: %+v", view, got[i])
		}
		if got[i].MsgID == "r" {
			r = &got[i]
		}
	}
	if live != (r != nil) {
		t.Fatalf("%s = %v; want r live=%v", view, ids(got), live)
	}
	if r == nil {
		return
	}
	wantSig := "sig-r" // the tags are the current revision's
	if rev != "" {
		wantSig = "sig-" + rev
	}
	if r.Text != text || r.Revision != rev || !r.Time.Equal(t0) || r.Tags["+freeq.at/sig"] != wantSig {
		t.Fatalf("%s: r = text %q rev %q time %v tags %v; want %q %q %v sig %s", view, r.Text, r.Revision, r.Time, r.Tags, text, rev, t0, wantSig)
	}
}

func containsWord(text, word string) bool {
	return slices.Contains(splitWords(text), word)
}

func splitWords(s string) []string {
	var out []string
	start := -1
	for i, c := range s + " " {
		if isTokenRune(c) {
			if start < 0 {
				start = i
			}
		} else if start >= 0 {
			out = append(out, s[start:i])
			start = -1
		}
	}
	return out
}

// A caller whose context ends after the writer has taken its request still learns the real
// outcome: the write committed, so Append reports success and the stored seq.
func TestAppendOutcomeSurvivesCancelAfterHandOver(t *testing.T) {
	s, _ := openTestStore(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	s.taken = cancel
	m := newMsg("01HANDOVER00000000000000001", "#c", at(0), "hello")
	if err := s.Append(ctx, m); err != nil {
		t.Fatalf("Append after hand-over = %v, want nil (the write commits)", err)
	}
	if m.Seq == 0 {
		t.Fatalf("Seq = 0, want the stored seq")
	}
	s.taken = nil
	if _, err := s.Get(context.Background(), m.MsgID); err != nil {
		t.Fatalf("Get: %v", err)
	}
}
