package media

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/gateway/rest"
)

// The media routes share the media rate limit: past it, 429 with Retry-After.
func TestMediaRateLimit(t *testing.T) {
	f := newFixtureLimited(t, rest.RateLimits{Media: rest.RateLimit{Requests: 3, Window: time.Hour}}, nil)
	paths := []string{"/api/v1/og?url=" + url.QueryEscape("file:///x"), "/api/v1/blob?url=x", "/api/v1/og?url=x", "/api/v1/blob?url=x"}
	for i, p := range paths {
		resp, _ := f.do("GET", p, "", nil, nil)
		want := http.StatusBadRequest
		if i == 3 {
			want = http.StatusTooManyRequests
		}
		if resp.StatusCode != want || (want == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "") {
			t.Fatalf("request %d: %d, Retry-After %q", i, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
}

// counter reads a counter of the fixture's registry by name and label values ("" for none).
func (f *fixture) counter(name string, labels ...string) float64 {
	f.t.Helper()
	families, err := f.registry.Gather()
	if err != nil {
		f.t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for i, l := range m.GetLabel() {
				if i >= len(labels) || l.GetValue() != labels[i] {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func TestMediaMetrics(t *testing.T) {
	f := newFixture(t, nil)
	f.upload("tok-alice", "a.txt", []byte("hello"), nil)
	f.upload("tok-alice", "b.txt", []byte("hi"), map[string]string{"did": didBob})
	f.do("GET", "/api/v1/og?url="+url.QueryEscape("http://169.254.169.254/"), "", nil, nil)
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"palaver_media_uploads_total", []string{"stored"}, 1},
		{"palaver_media_uploads_total", []string{"forbidden"}, 1},
		{"palaver_media_upload_bytes_total", nil, 5},
		{"palaver_media_proxy_refusals_total", []string{"og"}, 1},
	} {
		if got := f.counter(tc.name, tc.labels...); got != tc.want {
			t.Errorf("%s%v: %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
}
