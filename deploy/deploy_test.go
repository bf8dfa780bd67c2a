package deploy

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/node"
	"github.com/palaver-chat/palaver/testcluster/nodetest"
	"github.com/palaver-chat/palaver/testcluster/poll"
)

const (
	rulesFile     = "prometheus/palaver-rules.yml"
	dashboardFile = "grafana/palaver-dashboard.json"
)

// fromPrometheus are series Prometheus itself makes, not a node.
var fromPrometheus = []string{"up"}

// metricRef finds the metric names in a query: an identifier not followed by "(" (a function),
// not a label name inside braces or by(...), not a keyword; the queries here are written so
// (labels only in by/on/without lists and matchers, which are removed first).
var (
	metricRef = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	// matchers {...}, grouping by (...), on (...), strings and durations [6h] go first.
	noise = regexp.MustCompile(`\{[^}]*\}|\b(by|on|without|ignoring|group_left|group_right)\s*\([^)]*\)|"[^"]*"|\[[^\]]*\]`)
	// functions and aggregations are followed by "("; keywords stand alone.
	keywords = []string{"by", "on", "without", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset"}
)

// metricNames lists the metric names a query selects.
func metricNames(t *testing.T, expr string) []string {
	t.Helper()
	cleaned := noise.ReplaceAllString(expr, " ")
	var names []string
	for _, loc := range metricRef.FindAllStringIndex(cleaned, -1) {
		name := cleaned[loc[0]:loc[1]]
		rest := strings.TrimLeft(cleaned[loc[1]:], " ")
		if strings.HasPrefix(rest, "(") || slices.Contains(keywords, name) || (loc[0] > 0 && cleaned[loc[0]-1] >= '0' && cleaned[loc[0]-1] <= '9') {
			continue
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		t.Fatalf("%q selects no metric", expr)
	}
	return names
}

// ruleExprs returns the expressions of the alerting rules (their `expr:` values, which may be
// folded over lines with `>`).
func ruleExprs(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var exprs []string
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		field, value, ok := strings.Cut(strings.TrimSpace(lines[i]), "expr:")
		if !ok || field != "" {
			continue
		}
		value = strings.TrimSpace(value)
		if value == ">" {
			value = ""
			for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "          ") {
				i++
				value += " " + strings.TrimSpace(lines[i])
			}
		}
		exprs = append(exprs, value)
	}
	if len(exprs) == 0 {
		t.Fatal("no rule")
	}
	return exprs
}

// dashboardExprs returns the expressions of every panel's targets.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if dash.UID == "" || len(dash.Panels) == 0 {
		t.Fatalf("%s: no uid or no panels", dashboardFile)
	}
	var exprs []string
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			exprs = append(exprs, target.Expr)
		}
	}
	return exprs
}

// TestMetricNames checks the query reader the test below relies on.
func TestMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`palaver_raft_voters_alive <= palaver_raft_voters / 2`:                                                          {"palaver_raft_voters_alive", "palaver_raft_voters"},
		`sum by (job) (palaver_raft_is_leader) < 1`:                                                                     {"palaver_raft_is_leader"},
		`up{job=~".*palaver.*"} == 0`:                                                                                   {"up"},
		`predict_linear(palaver_data_dir_available_bytes[6h], 24 * 3600) < 0`:                                           {"palaver_data_dir_available_bytes"},
		`histogram_quantile(0.99, sum by (le, instance) (rate(palaver_raft_apply_seconds_bucket[5m])))`:                 {"palaver_raft_apply_seconds_bucket"},
		`max by (job, origin) (label_replace(x_head, "origin", "$1", "node", "(.+)")) - on (job, origin) group_right y`: {"x_head", "y"},
	} {
		if got := metricNames(t, expr); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", expr, got, want)
		}
	}
}

// exported scrapes every node of a live three-node cluster where an operator's Prometheus does,
// on the --pprof-addr listener's /metrics (the public /metrics leaves out the series that name
// other nodes, which the rules compare), and returns the names of the series they export (a
// histogram's as name_bucket, name_sum and name_count).
func exported(t *testing.T) map[string]bool {
	t.Helper()
	nodes := nodetest.StartCluster(t, "deploy.test", func(c *node.Config) { c.PprofAddr = "127.0.0.1:0" })
	// Some series exist once there is traffic: an IRC connection and a REST request per node.
	for _, n := range nodes {
		conn, err := net.Dial("tcp", n.IRCAddr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		resp, err := http.Get("http://" + n.HTTPAddr() + "/api/v1/health")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	names := map[string]bool{}
	scrape := func() {
		for _, n := range nodes {
			resp, err := http.Get("http://" + n.PprofAddr() + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
			for sc.Scan() {
				line := sc.Text()
				if strings.HasPrefix(line, "#") || line == "" {
					continue
				}
				name, _, _ := strings.Cut(line, " ")
				name, _, _ = strings.Cut(name, "{")
				names[name] = true
			}
			resp.Body.Close()
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A node lists its cursors over the others, and its dead-letter counters for them, once it
	// knows them as peers.
	poll.Within(t, time.Minute, "every node exporting its exchange cursors and dead-letter counters", func() bool {
		scrape()
		return names["palaver_exchange_in_cursor"] && names["palaver_exchange_dead_letters_total"] && names["palaver_connections"]
	})
	return names
}

// TestRulesAndDashboardNameExportedMetrics: every metric a rule or a panel selects is one a
// running cluster exports.
func TestRulesAndDashboardNameExportedMetrics(t *testing.T) {
	names := exported(t)
	for file, exprs := range map[string][]string{rulesFile: ruleExprs(t), dashboardFile: dashboardExprs(t)} {
		for _, expr := range exprs {
			for _, name := range metricNames(t, expr) {
				if !names[name] && !slices.Contains(fromPrometheus, name) {
					t.Errorf("%s: %q selects %s, which no node exports", file, expr, name)
				}
			}
		}
	}
}
