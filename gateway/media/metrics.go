package media

import "github.com/prometheus/client_golang/prometheus"

// metricSet holds the surface's collectors.
type metricSet struct {
	uploads     *prometheus.CounterVec // by result
	uploadBytes prometheus.Counter
	fetches     *prometheus.CounterVec // by proxy and result
	refusals    *prometheus.CounterVec // by proxy
	served      *prometheus.CounterVec // by where the bytes came from
	copies      *prometheus.CounterVec // by reason and result
	underCopied prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) metricSet {
	m := metricSet{
		uploads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "palaver_media_uploads_total",
			Help: "Uploads by result (stored, too_large, quota, disk_full, bad_request, forbidden, error)."}, []string{"result"}),
		uploadBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "palaver_media_upload_bytes_total",
			Help: "Bytes of stored uploads (plaintext)."}),
		fetches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "palaver_media_proxy_fetches_total",
			Help: "Outbound fetches of the blob, preview and space-media proxies, by proxy and result."}, []string{"proxy", "result"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "palaver_media_proxy_refusals_total",
			Help: "URLs the proxies refused (not allowed, or stopped by the request-forgery guard), by proxy."}, []string{"proxy"}),
		served: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "palaver_media_served_total",
			Help: "Media downloads by source (local, holder) and result."}, []string{"source", "result"}),
		copies: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "palaver_media_copies_total",
			Help: "Copies of uploads sent to another node with an upload (upload), received from one (received) or taken by the repair pass (repair), by result."}, []string{"reason", "result"}),
		underCopied: prometheus.NewGauge(prometheus.GaugeOpts{Name: "palaver_media_under_replicated",
			Help: "Uploads held by fewer servers of the cluster than --media-replicas asks (capped by the cluster size), at the last repair pass."}),
	}
	if reg != nil {
		reg.MustRegister(m.uploads, m.uploadBytes, m.fetches, m.refusals, m.served, m.copies, m.underCopied)
	}
	return m
}
