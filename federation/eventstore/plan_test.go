package eventstore

import (
	"context"
	"strings"
	"testing"
)

// TestQueryPlans guards the performance shape of the hot queries: each is an index walk in the
// order it returns, never a sort of everything that matches.
func TestQueryPlans(t *testing.T) {
	s := viewFixture(t)
	ctx := context.Background()
	tests := []struct {
		name     string
		query    string
		args     []any
		wantUses []string
	}{
		{"range asc", sqlRangeAsc, []any{"#c", 1, 2, 3}, []string{"messages_live_by_okey"}},
		{"range desc", sqlRangeDesc, []any{"#c", 1, 2, 3}, []string{"messages_live_by_okey"}},
		{"export", sqlExport, []any{"#c", 1, 2}, []string{"messages_live_by_seq"}},
		{"search", sqlSearch, []any{`"x"`, 1, "#c", 2}, []string{"SCAN messages_fts", "okey=?"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, err := s.readDB.QueryContext(ctx, "EXPLAIN QUERY PLAN "+tt.query, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var plan []string
			for rows.Next() {
				var id, parent, unused int
				var detail string
				if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			joined := strings.Join(plan, "\n")
			for _, want := range tt.wantUses {
				if !strings.Contains(joined, want) {
					t.Errorf("plan does not use %q:\n%s", want, joined)
				}
			}
			if strings.Contains(joined, "TEMP B-TREE") {
				t.Errorf("plan sorts:\n%s", joined)
			}
		})
	}
}
