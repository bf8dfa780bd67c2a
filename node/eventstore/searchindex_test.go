package eventstore

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"
)

// wantIndexComplete checks that the search index holds exactly the live roots and that its
// watermark is the greatest seq stored, once the index has caught up.
func wantIndexComplete(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	if err := s.awaitIndexed(ctx); err != nil {
		t.Fatal(err)
	}
	var indexed, maxSeq, docs, live int64
	for _, q := range []struct {
		query string
		dst   *int64
	}{
		{sqlIndexedSeq, &indexed},
		{sqlMaxSeq, &maxSeq},
		{`SELECT COUNT(*) FROM messages_fts_docsize`, &docs},
		{`SELECT COUNT(*) FROM messages WHERE replaces_msgid IS NULL AND deleted_at_ms IS NULL`, &live},
	} {
		if err := s.readDB.QueryRowContext(ctx, q.query).Scan(q.dst); err != nil {
			t.Fatalf("%s: %v", q.query, err)
		}
	}
	if indexed != maxSeq || docs != live {
		t.Fatalf("search index: watermark %d of %d rows, %d documents for %d live roots", indexed, maxSeq, docs, live)
	}
}

// TestSearchIndexCatchesUpAtOpen: rows above the watermark (a crash before their index
// transaction) are indexed when the store opens, each root with its current text, deleted ones
// not at all.
func TestSearchIndexCatchesUpAtOpen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(ctx, Options{Path: path, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	root := newMsg("r", "#c", at(0), "original words")
	mustAppend(t, s, root, newMsg("gone", "#c", at(time.Second), "deleted words"), newMsg("x", "#c", at(2*time.Second), "plain words"))
	mustAppend(t, s, newEdit("e1", "r", root, at(3*time.Second), "edited words"))
	mustAppend(t, s, newEdit("orphan", "later", root, at(4*time.Second), "early words"))
	mustAppend(t, s, newMsg("later", "#c", at(5*time.Second), "late root"))
	if err := s.Delete(ctx, "gone", at(6*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// What a crash before any index transaction leaves: the rows, no index rows, watermark 0.
	db, err := sql.Open("sqlite", dsn(path, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`INSERT INTO messages_fts(messages_fts) VALUES ('delete-all')`,
		`UPDATE search_index_state SET indexed_seq = 0`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(ctx, Options{Path: path, Logger: quietLogger})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	if s.index.behind() {
		t.Fatalf("Open left the index behind: watermark %d of %d", s.index.indexed.Load(), s.index.committed.Load())
	}
	wantIndexComplete(t, s)
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"words", []string{"later", "x", "r"}},
		{"edited", []string{"r"}},
		{"original", nil},
		{"deleted", nil},
		{"early", []string{"later"}},
		{"late", nil},
	} {
		hits, err := s.Search(ctx, "#c", tc.query, 0, 10)
		wantIDs(t, hits, err, tc.want, nil)
	}
}

// TestSearchIndexFollowsWrites: whatever the indexing steps, a search sees every write made
// before it: roots, edits of roots already indexed or not, edits that arrive before their root,
// deletes of roots indexed or not.
func TestSearchIndexFollowsWrites(t *testing.T) {
	s, _ := openTestStore(t, true)
	ctx := context.Background()
	sec := time.Second
	a := newMsg("a", "#v", at(1*sec), "alpha one")
	b := newMsg("b", "#v", at(2*sec), "bravo one")
	steps := []struct {
		name   string
		write  func() error
		search bool // search (so catch the index up) after the write
	}{
		{"roots", func() error { return s.Append(ctx, a, b, newMsg("c", "#v", at(3*sec), "charlie one")) }, true},
		{"edit an indexed root", func() error { return s.Append(ctx, newEdit("a2", "a", a, at(4*sec), "alpha two")) }, false},
		{"edit the edit", func() error { return s.Append(ctx, newEdit("a3", "a2", a, at(5*sec), "alpha three")) }, true},
		{"delete an indexed root", func() error { return s.Delete(ctx, "b", at(6*sec)) }, true},
		{"new root", func() error { return s.Append(ctx, newMsg("d", "#v", at(7*sec), "delta one")) }, false},
		{"edit it before indexing", func() error {
			return s.Append(ctx, newEdit("d2", "d", newMsg("d", "#v", at(7*sec), ""), at(8*sec), "delta two"))
		}, false},
		{"root deleted before indexing", func() error {
			if err := s.Append(ctx, newMsg("e", "#v", at(9*sec), "echo one")); err != nil {
				return err
			}
			return s.Delete(ctx, "e", at(10*sec))
		}, false},
		{"edit before its root", func() error {
			return s.Append(ctx, newEdit("f2", "f", newMsg("f", "#v", at(11*sec), ""), at(12*sec), "foxtrot two"))
		}, true},
		{"its root", func() error { return s.Append(ctx, newMsg("f", "#v", at(11*sec), "foxtrot one")) }, true},
	}
	for _, st := range steps {
		if err := st.write(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if st.search {
			if _, err := s.Search(ctx, "#v", "one", 0, 10); err != nil {
				t.Fatalf("%s: search: %v", st.name, err)
			}
		}
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"one", []string{"c"}},
		{"two", []string{"f", "d"}},
		{"three", []string{"a"}},
		{"alpha", []string{"a"}},
		{"bravo", nil},
		{"echo", nil},
		{"foxtrot", []string{"f"}},
	} {
		hits, err := s.Search(ctx, "#v", tc.query, 0, 10)
		wantIDs(t, hits, err, tc.want, nil)
	}
	wantIndexComplete(t, s)
}
