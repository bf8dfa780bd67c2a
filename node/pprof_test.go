package node

import (
	"io"
	"net/http"
	"testing"
)

// --pprof-addr serves the runtime profiles on their own listener, and the public HTTP server
// never does.
func TestPprofOnItsOwnListener(t *testing.T) {
	get := func(url string) int {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	cases := []struct {
		name       string
		pprofAddr  string
		wantListen bool
	}{
		{"off by default", "", false},
		{"on when asked", "127.0.0.1:0", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := startNode(t, t.TempDir(), func(c *Config) { c.PprofAddr = tc.pprofAddr })
			if got := (n.PprofAddr() != ""); got != tc.wantListen {
				t.Fatalf("pprof listening = %v, want %v", got, tc.wantListen)
			}
			if code := get("http://" + n.HTTPAddr() + "/debug/pprof/cmdline"); code != http.StatusNotFound {
				t.Fatalf("public server /debug/pprof/cmdline = %d, want 404", code)
			}
			if tc.wantListen {
				if code := get("http://" + n.PprofAddr() + "/debug/pprof/cmdline"); code != http.StatusOK {
					t.Fatalf("pprof /debug/pprof/cmdline = %d, want 200", code)
				}
			}
		})
	}
}
