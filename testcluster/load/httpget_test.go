package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestRunHTTPGetCountsAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.Write([]byte(`[{"msgid":"a"}]`))
		case "/empty":
			w.Write([]byte(`[]`))
		default:
			http.Error(w, "nope", http.StatusNotFound)
		}
	}))
	defer srv.Close()

	tests := []struct {
		name                          string
		paths                         []HTTPGetPath
		wantOK, wantNon200, wantUnexp bool
		wantLabels                    int
	}{
		{"all ok", []HTTPGetPath{{Label: "ok", Path: "/ok", Expect: `"msgid"`}}, true, false, false, 0},
		{"any body", []HTTPGetPath{{Label: "empty", Path: "/empty"}}, true, false, false, 0},
		{"unexpected body", []HTTPGetPath{{Label: "empty", Path: "/empty", Expect: `"msgid"`}}, false, false, true, 0},
		{"non-200", []HTTPGetPath{{Label: "missing", Path: "/missing"}}, false, true, false, 0},
		{"two labels", []HTTPGetPath{{Label: "ok", Path: "/ok"}, {Label: "empty", Path: "/empty", Expect: "[]"}}, true, false, false, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := RunHTTPGet(context.Background(), HTTPGetConfig{
				BaseURL: srv.URL, Paths: tc.paths, Concurrency: 4, Duration: 50 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Requests == 0 || res.Errors != 0 {
				t.Fatalf("requests %d, errors %d: %v", res.Requests, res.Errors, res.FirstFails)
			}
			if got := res.OK == res.Requests; got != tc.wantOK {
				t.Errorf("all OK = %v (%d of %d), want %v", got, res.OK, res.Requests, tc.wantOK)
			}
			if got := res.Non200 == res.Requests; got != tc.wantNon200 {
				t.Errorf("all non-200 = %v (%d), want %v", got, res.Non200, tc.wantNon200)
			}
			if got := res.Unexpected == res.Requests; got != tc.wantUnexp {
				t.Errorf("all unexpected = %v (%d), want %v", got, res.Unexpected, tc.wantUnexp)
			}
			if len(res.ByLabel) != tc.wantLabels {
				t.Errorf("%d labels reported, want %d", len(res.ByLabel), tc.wantLabels)
			}
			if res.Latency.Count != res.Requests || res.RequestsPerSecond <= 0 {
				t.Errorf("latency count %d for %d requests, %.0f/s", res.Latency.Count, res.Requests, res.RequestsPerSecond)
			}
		})
	}
}

func TestRunHTTPGetNeedsPaths(t *testing.T) {
	if _, err := RunHTTPGet(context.Background(), HTTPGetConfig{BaseURL: "http://127.0.0.1:1"}); err == nil {
		t.Fatal("a load without paths ran")
	}
}
