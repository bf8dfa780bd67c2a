package eventstore

import (
	"context"
	"strings"
	"testing"
)

// TestQueryPlans guards the performance shape of every statement: no full scan of messages, no
// sort; and the views and search walk the indexes they were designed for.
func TestQueryPlans(t *testing.T) {
	s := viewFixture(t)
	ctx := context.Background()
	wantUses := map[string][]string{
		sqlRangeAsc:          {"messages_live_by_okey"},
		sqlRangeDesc:         {"messages_live_by_okey"},
		sqlExport:            {"messages_live_by_seq"},
		sqlSearch:            {"SCAN messages_fts", "okey=?"},
		sqlSearchWalk:        {"SCAN messages_fts", "okey=?"},
		sqlLatestEdit:        {"messages_edits"},
		sqlInsertRoot:        {"okey>? AND okey<?"},
		sqlDeleteRevisionsOf: {"messages_edits"},
	}
	var all []namedStatement
	all = append(all, s.w.all()...)
	all = append(all, s.rootChunks.all()...)
	all = append(all, s.ftsChunks.all()...)
	all = append(all, s.storedIDs.all()...)
	all = append(all, s.r.all()...)
	for _, st := range all {
		t.Run(firstLine(st.query), func(t *testing.T) {
			rows, err := s.writeDB.QueryContext(ctx, "EXPLAIN QUERY PLAN "+st.query, make([]any, countParams(st.query))...)
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
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			joined := strings.Join(plan, "\n")
			for _, want := range wantUses[st.query] {
				if !strings.Contains(joined, want) {
					t.Errorf("plan does not use %q:\n%s", want, joined)
				}
			}
			for _, line := range plan {
				if strings.HasPrefix(line, "SCAN m ") || line == "SCAN m" || strings.HasPrefix(line, "SCAN messages ") ||
					line == "SCAN messages" || strings.HasPrefix(line, "SCAN e") {
					t.Errorf("plan scans the table:\n%s", joined)
				}
			}
			if strings.Contains(joined, "TEMP B-TREE") {
				t.Errorf("plan sorts:\n%s", joined)
			}
		})
	}
}

// countParams counts the parameters of a statement written with "?" or "?N" placeholders.
func countParams(query string) int {
	plain, numbered := 0, 0
	for i := 0; i < len(query); i++ {
		if query[i] != '?' {
			continue
		}
		n, j := 0, i+1
		for ; j < len(query) && query[j] >= '0' && query[j] <= '9'; j++ {
			n = n*10 + int(query[j]-'0')
		}
		if j == i+1 {
			plain++
		}
		numbered = max(numbered, n)
	}
	return max(plain, numbered)
}
