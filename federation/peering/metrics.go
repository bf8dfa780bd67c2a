package peering

import "github.com/prometheus/client_golang/prometheus"

// metrics are the palaver_federation_* collectors.
type metrics struct {
	events  *prometheus.CounterVec // peer, direction (in|out), result
	linkUp  *prometheus.GaugeVec   // peer: 1 while this node's stream to it is open
	keyRead *prometheus.CounterVec // peer, result
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "palaver_federation_events_total",
			Help: "Federation events by peer, direction (in, out) and result."}, []string{"peer", "direction", "result"}),
		linkUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "palaver_federation_link_up",
			Help: "1 while this node's stream to the peer is open."}, []string{"peer"}),
		keyRead: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "palaver_federation_key_lookups_total",
			Help: "Peer server key lookups by peer and result."}, []string{"peer", "result"}),
	}
	if reg != nil {
		reg.MustRegister(m.events, m.linkUp, m.keyRead)
	}
	return m
}

func (m *metrics) count(peer, direction, result string, n int) {
	if n > 0 {
		m.events.WithLabelValues(peer, direction, result).Add(float64(n))
	}
}
