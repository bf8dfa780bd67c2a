package eventstore

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestOriginSeqs: the seq-only read lists exactly the seqs of the rows OriginThrough returns, for
// every range and limit, and walks the covering index without reading a row.
func TestOriginSeqs(t *testing.T) {
	s, _ := openTestStore(t, true)
	ctx := context.Background()
	for i := range 30 {
		m := newMsg(fmt.Sprintf("o%02d", i), "#c", at(0), "x")
		m.Origin = []string{"a", "b", "a"}[i%3]
		mustAppend(t, s, m)
	}
	for _, tc := range []struct {
		after, through int64
		limit          int
	}{{0, 30, 100}, {0, 30, 5}, {4, 17, 100}, {17, 17, 10}, {29, 100, 10}, {0, 0, 10}} {
		rows, err := s.OriginThrough(ctx, "a", tc.after, tc.through, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		var want []int64
		for _, r := range rows {
			want = append(want, r.Seq)
		}
		got, err := s.OriginSeqs(ctx, "a", tc.after, tc.through, tc.limit)
		if err != nil || !slices.Equal(got, want) && len(got)+len(want) > 0 {
			t.Errorf("OriginSeqs(%d, %d, %d) = %v, %v; want %v", tc.after, tc.through, tc.limit, got, err, want)
		}
	}
	var plan []string
	rows, err := s.readDB.QueryContext(ctx, "EXPLAIN QUERY PLAN "+sqlOriginSeqs, "a", 0, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if joined := strings.Join(plan, "\n"); !strings.Contains(joined, "COVERING INDEX messages_by_origin") || strings.Contains(joined, "TEMP B-TREE") {
		t.Errorf("OriginSeqs's plan is not a walk of the covering index:\n%s", joined)
	}
}

// indexSeqs is OriginSeqs's answer from the index alone.
func indexSeqs(t *testing.T, s *Store, origin string, after, through int64, limit int) []int64 {
	t.Helper()
	rows, err := s.readDB.QueryContext(context.Background(), sqlOriginSeqs, origin, after, through, limit)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			t.Fatal(err)
		}
		out = append(out, seq)
	}
	return out
}

// TestOriginSeqsFromMemory: the seqs kept in memory give the index's answer for every range,
// with rows stored before the store opened (not in memory), duplicates refused, edits, and lists
// that let their oldest seqs go; and memory answers only ranges it holds whole.
func TestOriginSeqsFromMemory(t *testing.T) {
	defer func(n int) { recentSeqsPerOrigin = n }(recentSeqsPerOrigin)
	recentSeqsPerOrigin = 8
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(context.Background(), Options{Path: path, NoSync: true, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	origins := []string{"a", "b", "a", "c"}
	add := func(s *Store, from, to int) {
		for i := from; i < to; i++ {
			m := newMsg(fmt.Sprintf("o%03d", i), "#c", at(time.Duration(i)*time.Millisecond), "x")
			m.Origin = origins[i%len(origins)]
			mustAppend(t, s, m)
			if i%5 == 0 { // an edit: a row of its origin too
				e := newEdit(fmt.Sprintf("e%03d", i), m.MsgID, m, at(time.Duration(i+1)*time.Millisecond), "y")
				e.Origin = m.Origin
				mustAppend(t, s, e)
			}
		}
	}
	add(s, 0, 10)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(context.Background(), Options{Path: path, NoSync: true, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	opened := s.seqs.opened
	add(s, 10, 60)
	if err := s.Append(context.Background(), newMsg("o011", "#c", at(11*time.Millisecond), "again")); err == nil {
		t.Fatal("a duplicate was stored")
	}
	last := opened + 100
	for _, origin := range []string{"a", "b", "c", "z"} {
		for after := int64(0); after <= last; after += 3 {
			for _, span := range []int64{0, 1, 7, 40, 200} {
				for _, limit := range []int{1, 4, 500} {
					got, err := s.OriginSeqs(context.Background(), origin, after, after+span, limit)
					want := indexSeqs(t, s, origin, after, after+span, limit)
					if err != nil || len(got)+len(want) > 0 && !slices.Equal(got, want) {
						t.Fatalf("OriginSeqs(%s, %d, %d, %d) = %v, %v; the index says %v", origin, after, after+span, limit, got, err, want)
					}
				}
			}
		}
	}
	for _, tc := range []struct {
		name   string
		origin string
		after  int64
		ok     bool
	}{
		{"before the store opened", "b", opened - 1, false},
		{"an origin with no new row, from the opening", "z", opened, true},
		{"below a list's floor", "a", s.seqs.by["a"].floor - 1, false},
		{"at a list's floor", "a", s.seqs.by["a"].floor, true},
	} {
		if _, ok := s.seqs.between(tc.origin, tc.after, last, 10); ok != tc.ok {
			t.Errorf("%s: answered from memory %v, want %v", tc.name, ok, tc.ok)
		}
	}
}
