package node

import (
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
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

// /debug/palaver/state on the --pprof-addr listener answers the replica's indexes and state
// hash, computed for the request; /metrics carries no hash (scrapes never encode the state).
func TestReplicaStateOnDemand(t *testing.T) {
	n := startNode(t, t.TempDir(), func(c *Config) { c.PprofAddr = "127.0.0.1:0" })
	getBody := func(url string) []byte {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
		}
		return body
	}
	if strings.Contains(string(getBody("http://"+n.HTTPAddr()+"/metrics")), "state_hash") {
		t.Error("/metrics exposes a state hash")
	}
	// The operator's listener serves every metric; the public port leaves out the Raft term and
	// applied index.
	public, full := string(getBody("http://"+n.HTTPAddr()+"/metrics")), string(getBody("http://"+n.PprofAddr()+"/metrics"))
	for _, name := range []string{"palaver_raft_term", "palaver_raft_applied_index"} {
		if strings.Contains(public, name) || !strings.Contains(full, name) {
			t.Errorf("%s: on the public port %v, on the operator's %v", name, strings.Contains(public, name), strings.Contains(full, name))
		}
	}
	if !strings.Contains(public, "palaver_raft_voters") || !strings.Contains(public, "palaver_channels") {
		t.Error("the public /metrics lacks palaver_raft_voters or palaver_channels")
	}
	// An entry applied between the answer and the local read makes them differ: ask again.
	var rs ReplicaState
	var index uint64
	var hash [32]byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if err := json.Unmarshal(getBody("http://"+n.PprofAddr()+"/debug/palaver/state"), &rs); err != nil {
			t.Fatal(err)
		}
		if index, hash = n.Machine().IndexedHash(); rs.StateIndex == index {
			break
		}
	}
	if rs.StateIndex != index || rs.Hash != hex.EncodeToString(hash[:]) || rs.AppliedIndex == 0 || index == 0 {
		t.Errorf("answer %+v, want state index %d and hash %x", rs, index, hash)
	}
}
