package eventstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
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
