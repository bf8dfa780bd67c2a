package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func scrape(t *testing.T, s *Set) string {
	t.Helper()
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	body, err := io.ReadAll(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

func TestSetExposesEveryMetric(t *testing.T) {
	s := New()
	s.Connections.WithLabelValues("websocket").Inc()
	s.ConnectionsTotal.WithLabelValues("tcp").Add(3)
	s.Messages.Inc()
	s.SASL.WithLabelValues("success").Inc()
	s.SendQueueExceeded.Inc()
	s.RaftApplySeconds.Observe(0.002)
	s.HTTPRequests.WithLabelValues("GET", "/api/v1/health", "200").Inc()
	s.HTTPSeconds.WithLabelValues("GET", "/api/v1/health").Observe(0.01)
	channels := 7.0
	s.GaugeFunc("palaver_channels", "Channels.", func() float64 { return channels })
	s.GaugeFunc("uptime_seconds", "Uptime.", func() float64 { return 42 })

	body := scrape(t, s)
	for _, want := range []string{
		`palaver_connections{transport="websocket"} 1`,
		`palaver_connections_total{transport="tcp"} 3`,
		`palaver_messages_total 1`,
		`palaver_sasl_total{result="success"} 1`,
		`palaver_sasl_total{result="failure"} 0`,
		`palaver_sendq_exceeded_total 1`,
		`palaver_raft_apply_seconds_count 1`,
		`palaver_http_requests_total{code="200",method="GET",route="/api/v1/health"} 1`,
		`palaver_http_request_seconds_count{method="GET",route="/api/v1/health"} 1`,
		`palaver_channels 7`,
		`palaver_uptime_seconds 42`,
		`go_goroutines `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("exposition lacks %q", want)
		}
	}
	channels = 8
	if body := scrape(t, s); !strings.Contains(body, "palaver_channels 8") {
		t.Error("gauge func not re-read at scrape")
	}
}

func TestSetsAreIndependent(t *testing.T) {
	a, b := New(), New()
	a.Messages.Inc()
	a.GaugeFunc("channels", "Channels.", func() float64 { return 1 })
	b.GaugeFunc("channels", "Channels.", func() float64 { return 2 })
	if body := scrape(t, b); !strings.Contains(body, "palaver_messages_total 0") || !strings.Contains(body, "palaver_channels 2") {
		t.Fatalf("second set shares state with the first:\n%s", body)
	}
}

func TestGaugeFuncDuplicatePanics(t *testing.T) {
	s := New()
	s.GaugeFunc("raft_term", "Term.", func() float64 { return 1 })
	defer func() {
		if recover() == nil {
			t.Fatal("duplicate registration did not panic")
		}
	}()
	s.GaugeFunc("palaver_raft_term", "Term.", func() float64 { return 1 })
}

// TestPublicHandlerLeavesOutTheDeploymentMap: the public exposition drops the families that name
// peers, nodes, holders or servers and the Raft term and index; Handler keeps them.
func TestPublicHandlerLeavesOutTheDeploymentMap(t *testing.T) {
	s := New()
	s.Messages.Inc()
	s.GaugeFunc("raft_term", "Term.", func() float64 { return 3 })
	s.GaugeFunc("raft_applied_index", "Index.", func() float64 { return 99 })
	s.GaugeFunc("raft_voters", "Voters.", func() float64 { return 3 })
	peers := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "palaver_exchange_peer", Help: "Peers."}, []string{"peer", "trust"})
	peers.WithLabelValues("did:web:other.example", "full").Set(1)
	holders := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "palaver_fetch_total", Help: "Fetches."}, []string{"holder"})
	holders.WithLabelValues("node-b").Inc()
	s.Registry.MustRegister(peers, holders)

	rec := httptest.NewRecorder()
	s.PublicHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	public := rec.Body.String()
	full := scrape(t, s)
	for _, hidden := range []string{"palaver_raft_term", "palaver_raft_applied_index", "palaver_exchange_peer", "other.example", "node-b"} {
		if strings.Contains(public, hidden) {
			t.Errorf("the public exposition shows %s", hidden)
		}
		if !strings.Contains(full, hidden) {
			t.Errorf("the full exposition lacks %s", hidden)
		}
	}
	for _, kept := range []string{"palaver_messages_total 1", "palaver_raft_voters 3", "go_goroutines"} {
		if !strings.Contains(public, kept) {
			t.Errorf("the public exposition lacks %s", kept)
		}
	}
}
