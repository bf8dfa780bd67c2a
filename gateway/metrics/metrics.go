package metrics

import (
	"net/http"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// Prefix starts the name of every metric in a Set.
const Prefix = "palaver_"

// Set is the collection of gateway metrics registered on Registry.
type Set struct {
	Registry *prometheus.Registry

	// Connections is the number of open client connections by transport
	// ("tcp", "tls", "websocket").
	Connections *prometheus.GaugeVec
	// ConnectionsTotal counts accepted client connections by transport.
	ConnectionsTotal *prometheus.CounterVec
	// Messages counts PRIVMSG/NOTICE messages accepted for delivery.
	Messages prometheus.Counter
	// SASL counts SASL attempts by result ("success" or "failure").
	SASL *prometheus.CounterVec
	// SendQueueExceeded counts sessions cut for exceeding their send queue.
	SendQueueExceeded prometheus.Counter
	// RaftApplySeconds observes the time from proposing a Raft command to
	// its application.
	RaftApplySeconds prometheus.Histogram
	// HTTPRequests counts REST requests by method, route template and
	// status code.
	HTTPRequests *prometheus.CounterVec
	// HTTPSeconds observes REST request durations by method and route.
	HTTPSeconds *prometheus.HistogramVec
}

// New builds a Set on a fresh registry, together with the Go runtime and
// process collectors.
func New() *Set {
	s := &Set{
		Registry: prometheus.NewRegistry(),
		Connections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: Prefix + "connections",
			Help: "Open client connections by transport.",
		}, []string{"transport"}),
		ConnectionsTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: Prefix + "connections_total",
			Help: "Client connections accepted, by transport.",
		}, []string{"transport"}),
		Messages: prometheus.NewCounter(prometheus.CounterOpts{
			Name: Prefix + "messages_total",
			Help: "Messages accepted for delivery.",
		}),
		SASL: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: Prefix + "sasl_total",
			Help: "SASL authentication attempts by result.",
		}, []string{"result"}),
		SendQueueExceeded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: Prefix + "sendq_exceeded_total",
			Help: "Sessions closed because their send queue exceeded its budget.",
		}),
		RaftApplySeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: Prefix + "raft_apply_seconds",
			Help: "Time from proposing a Raft command to its application.",
			// 0.5 ms to about 4 s: a local apply is sub-millisecond, a
			// cluster round trip a few milliseconds, an election seconds.
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		HTTPRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: Prefix + "http_requests_total",
			Help: "HTTP requests by method, route template and status code.",
		}, []string{"method", "route", "code"}),
		HTTPSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    Prefix + "http_request_seconds",
			Help:    "HTTP request durations by method and route template.",
			Buckets: prometheus.DefBuckets,
		}, []string{"method", "route"}),
	}
	s.Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		s.Connections, s.ConnectionsTotal, s.Messages, s.SASL,
		s.SendQueueExceeded, s.RaftApplySeconds, s.HTTPRequests, s.HTTPSeconds,
	)
	// Pre-create the SASL results so both series are exported from zero.
	s.SASL.WithLabelValues("success")
	s.SASL.WithLabelValues("failure")
	return s
}

// GaugeFunc registers a gauge whose value is read from f at every scrape,
// such as palaver_channels, palaver_uptime_seconds or palaver_raft_term.
// The palaver_ prefix is added when name lacks it. f is called from the
// scraping goroutine and must be safe for concurrent use. Registering the
// same name twice is a programming error and panics.
func (s *Set) GaugeFunc(name, help string, f func() float64) {
	if !strings.HasPrefix(name, Prefix) {
		name = Prefix + name
	}
	s.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
}

// Handler serves the registry in the Prometheus text exposition format.
func (s *Set) Handler() http.Handler {
	return promhttp.HandlerFor(s.Registry, promhttp.HandlerOpts{Registry: s.Registry})
}

// operatorOnly are the families the public /metrics leaves out by name.
var operatorOnly = []string{Prefix + "raft_term", Prefix + "raft_applied_index"}

// operatorLabels mark a family as operator-only: its series name other nodes or servers.
var operatorLabels = []string{"peer", "node", "holder", "server"}

// Public reports whether a metric family may be shown on the public port.
func Public(mf *dto.MetricFamily) bool {
	if slices.Contains(operatorOnly, mf.GetName()) {
		return false
	}
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if slices.Contains(operatorLabels, l.GetName()) {
				return false
			}
		}
	}
	return true
}

// PublicHandler serves the families Public admits, in the Prometheus text exposition format.
func (s *Set) PublicHandler() http.Handler {
	return promhttp.HandlerFor(publicGatherer{s.Registry}, promhttp.HandlerOpts{})
}

type publicGatherer struct{ g prometheus.Gatherer }

func (p publicGatherer) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := p.g.Gather()
	return slices.DeleteFunc(mfs, func(mf *dto.MetricFamily) bool { return !Public(mf) }), err
}
