package rulescheck

import (
	"encoding/json"
	"log/slog"
	"os"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

const (
	rulesFile     = "../prometheus/palaver-rules.yml"
	dashboardFile = "../grafana/palaver-dashboard.json"
)

var promql = parser.NewParser(parser.Options{})

func parseRules(data []byte) (*rulefmt.RuleGroups, []error) {
	return rulefmt.Parse(data, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
}

// TestRulesLoad loads the alerting rules as Prometheus does; every alert has a severity and a
// summary, and no name is used twice.
func TestRulesLoad(t *testing.T) {
	data, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := parseRules(data)
	if len(errs) > 0 {
		t.Fatalf("%s: %v", rulesFile, errs)
	}
	seen := map[string]bool{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("rule %q of %s: want an alert with a severity and a summary", r.Alert, g.Name)
			}
			if seen[r.Alert] {
				t.Errorf("alert %s twice", r.Alert)
			}
			seen[r.Alert] = true
		}
	}
	if len(seen) == 0 {
		t.Fatal("no alert")
	}
}

// TestParserRefuses: the check can fail.
func TestParserRefuses(t *testing.T) {
	for name, rules := range map[string]string{
		"broken query":   "groups:\n  - name: x\n    rules:\n      - alert: X\n        expr: sum(\n",
		"unknown field":  "groups:\n  - name: x\n    rules:\n      - alert: X\n        expr: up\n        sevrity: x\n",
		"bad annotation": "groups:\n  - name: x\n    rules:\n      - alert: X\n        expr: up\n        annotations: {summary: \"{{ $labels.x \"}\n",
	} {
		if _, errs := parseRules([]byte(rules)); len(errs) == 0 {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestDashboardQueriesParse parses every panel's query with Prometheus' query parser.
func TestDashboardQueriesParse(t *testing.T) {
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			if _, err := promql.ParseExpr(target.Expr); err != nil {
				t.Errorf("panel %q: %q: %v", p.Title, target.Expr, err)
			}
		}
	}
}
