package media

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/palaver-chat/palaver/raft/fsm"
	fsmmedia "github.com/palaver-chat/palaver/raft/fsm/media"
)

// mesh stands for the cluster plane between the services of a test: the servers of the
// configuration, each one's internal routes on an HTTP listener, and which are down.
type mesh struct {
	mu      sync.Mutex
	servers []string
	urls    map[string]string
	down    map[string]bool
}

func (m *mesh) Servers() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.servers)
}

func (m *mesh) Alive(node string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.urls[node] != "" && !m.down[node]
}

func (m *mesh) setDown(node string, down bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down[node] = down
}

func (m *mesh) request(ctx context.Context, method, node, id string, body io.Reader) (*http.Request, error) {
	m.mu.Lock()
	base, down := m.urls[node], m.down[node]
	m.mu.Unlock()
	if base == "" || down {
		return nil, errors.New(node + " is not reachable")
	}
	req, err := http.NewRequestWithContext(ctx, method, base+"/internal/v1/media/"+id, body)
	if err == nil {
		req.Header.Set("X-Test-Node", "member")
	}
	return req, err
}

func (m *mesh) FetchHeld(ctx context.Context, node, id, rangeHeader string) (*http.Response, error) {
	req, err := m.request(ctx, http.MethodGet, node, id, nil)
	if err != nil {
		return nil, err
	}
	if rangeHeader != "" {
		req.Header.Set("Range", rangeHeader)
	}
	return http.DefaultClient.Do(req)
}

func (m *mesh) StoreCopy(ctx context.Context, node, id string, size int64, body io.Reader) error {
	req, err := m.request(ctx, http.MethodPut, node, id, body)
	if err != nil {
		return err
	}
	req.ContentLength = size
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return errors.New("copy refused: " + resp.Status)
	}
	return nil
}

// testCluster is three media services n1 (the fixture's, with the public routes), n2 and n3 over
// one replicated state, with replicas copies of each upload.
type testCluster struct {
	*fixture
	mesh *mesh
	svcs map[string]*Service
}

func newTestCluster(t *testing.T, replicas int) *testCluster {
	t.Helper()
	return newTestClusterOf(t, replicas, "n1", "n2", "n3")
}

// newTestClusterOf is newTestCluster with the named services, n1 first.
func newTestClusterOf(t *testing.T, replicas int, names ...string) *testCluster {
	t.Helper()
	return newTestClusterConf(t, replicas, func(*Config) {}, names...)
}

// newTestClusterConf is newTestClusterOf with mutate applied to every service's configuration.
func newTestClusterConf(t *testing.T, replicas int, mutate func(*Config), names ...string) *testCluster {
	t.Helper()
	m := &mesh{servers: names, urls: map[string]string{}, down: map[string]bool{}}
	f := newFixture(t, func(c *Config) { c.Holders, c.Options.Replicas = m, replicas; mutate(c) })
	tc := &testCluster{fixture: f, mesh: m, svcs: map[string]*Service{"n1": f.svc}}
	for _, name := range names[1:] {
		cfg := Config{Options: Options{Dir: t.TempDir(), Replicas: replicas}, Node: name, BaseURL: "http://palaver.test",
			State: f.machine, Proposer: f, Holders: m, Registerer: prometheus.NewRegistry()}
		mutate(&cfg)
		svc, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		tc.svcs[name] = svc
	}
	for name, svc := range tc.svcs {
		e := gin.New()
		svc.MountInternal(e, func(r *http.Request) error {
			if r.Header.Get("X-Test-Node") != "member" {
				return errors.New("not a member")
			}
			return nil
		})
		srv := httptest.NewServer(e)
		t.Cleanup(srv.Close)
		m.urls[name] = srv.URL
	}
	return tc
}

func (tc *testCluster) holders(id string) []string {
	var set []string
	tc.machine.Read(func(st *fsm.State) {
		if o, ok := fsmmedia.Of(st).Object(id); ok {
			set = o.HolderSet()
		}
	})
	return set
}

// has reports which services hold the bytes of id on their disks.
func (tc *testCluster) has(id string) []string {
	var out []string
	for name, svc := range tc.svcs {
		if svc.store.has(id) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func (tc *testCluster) uploadRandom(size int) ([]byte, uploadResult) {
	tc.t.Helper()
	content := make([]byte, size)
	rand.Read(content)
	resp, up := tc.upload("tok-alice", "a.bin", content, nil)
	if resp.StatusCode != http.StatusOK {
		tc.t.Fatalf("upload: %d", resp.StatusCode)
	}
	return content, up
}

func (tc *testCluster) mediaPath(up uploadResult) string {
	u, err := url.Parse(up.URL)
	if err != nil {
		tc.t.Fatal(err)
	}
	return u.Path
}

// TestUploadCopies: an upload is answered once the replica count of servers hold it, and is
// recorded with them; without enough reachable servers it is refused 503 and leaves nothing.
func TestUploadCopies(t *testing.T) {
	tc := newTestCluster(t, 2)
	_, up := tc.uploadRandom(70_000)
	holders := tc.holders(up.ID)
	if len(holders) != 2 || holders[0] != "n1" || !slices.Equal(tc.has(up.ID), holders) {
		t.Fatalf("holders %v, copies on %v", holders, tc.has(up.ID))
	}
	// The ranked target is down: the next one takes the copy.
	target := holders[1]
	tc.mesh.setDown(target, true)
	for range 4 {
		_, up2 := tc.uploadRandom(10)
		if got := tc.holders(up2.ID); !slices.Equal(got, []string{"n1", otherOf(target)}) {
			t.Fatalf("holders with %s down: %v", target, got)
		}
	}

	three := newTestCluster(t, 3)
	three.mesh.setDown("n3", true)
	resp, _ := three.upload("tok-alice", "a.bin", []byte("not enough servers"), nil)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("upload with a server short: %d", resp.StatusCode)
	}
	three.machine.Read(func(st *fsm.State) {
		if n := len(fsmmedia.Of(st).Objects()); n != 0 {
			t.Fatalf("%d uploads recorded", n)
		}
	})
	if entries, _ := os.ReadDir(three.svc.store.dir + "/objects"); len(entries) != 0 {
		t.Fatalf("the refused upload left %d files", len(entries))
	}
}

// TestServeFromAnotherHolder: a node whose copy is missing serves the upload, whole and by range,
// from another holder; with no holder reachable the answer is 503; the repair pass restores the
// node's copy once a holder is back.
func TestServeFromAnotherHolder(t *testing.T) {
	tc := newTestCluster(t, 2)
	content, up := tc.uploadRandom(150_000)
	path := tc.mediaPath(up)
	tc.svc.store.remove(up.ID)
	resp, body := tc.do(http.MethodGet, path, "", nil, nil)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, content) {
		t.Fatalf("served from the other holder: %d, %d bytes", resp.StatusCode, len(body))
	}
	resp, body = tc.do(http.MethodGet, path, "", nil, http.Header{"Range": {"bytes=65000-70000"}})
	if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(body, content[65000:70001]) ||
		resp.Header.Get("Content-Range") != "bytes 65000-70000/150000" {
		t.Fatalf("range from the other holder: %d %q, %d bytes", resp.StatusCode, resp.Header.Get("Content-Range"), len(body))
	}
	other := tc.holders(up.ID)[1]
	tc.mesh.setDown(other, true)
	resp, _ = tc.do(http.MethodGet, path, "", nil, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("no holder reachable: %d", resp.StatusCode)
	}
	if pending, err := tc.svc.Repair(context.Background()); err != nil || pending != 1 {
		t.Fatalf("repair with the holder down: %d %v", pending, err)
	}
	tc.mesh.setDown(other, false)
	if pending, err := tc.svc.Repair(context.Background()); err != nil || pending != 0 {
		t.Fatalf("repair: %d %v", pending, err)
	}
	if !tc.svc.store.has(up.ID) {
		t.Fatal("the copy was not restored")
	}
	tc.mesh.setDown(other, true)
	if resp, body := tc.do(http.MethodGet, path, "", nil, nil); resp.StatusCode != http.StatusOK || !bytes.Equal(body, content) {
		t.Fatalf("served from the restored copy: %d", resp.StatusCode)
	}
}

// TestRepairAfterRemoval: once a holder leaves the configuration, the first server drops it from
// the holder sets and the server ranked for the upload takes a copy, so the count is back.
func TestRepairAfterRemoval(t *testing.T) {
	tc := newTestCluster(t, 2)
	content, up := tc.uploadRandom(100_000)
	gone := tc.holders(up.ID)[1]
	stays := otherOf(gone)
	tc.mesh.setDown(gone, true)
	tc.mesh.mu.Lock()
	tc.mesh.servers = []string{"n1", stays}
	tc.mesh.mu.Unlock()
	underCopied := func() float64 {
		var m dto.Metric
		if err := tc.svc.metrics.underCopied.Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetGauge().GetValue()
	}
	repair := func(name string) {
		t.Helper()
		if pending, err := tc.svcs[name].Repair(context.Background()); err != nil || pending != 0 {
			t.Fatalf("repair on %s: %d %v", name, pending, err)
		}
	}
	repair("n1") // the first server drops the removed one; the copy is not n1's to take
	if got := tc.holders(up.ID); !slices.Equal(got, []string{"n1"}) || underCopied() != 1 {
		t.Fatalf("holders after the first pass: %v, %v under-replicated", got, underCopied())
	}
	later := func() time.Time { return time.Now().Add(orphanAge + time.Minute) }
	tc.svcs[gone].cfg.Now = later
	sweep := func(name string) {
		t.Helper()
		if err := tc.svcs[name].Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	sweep(gone) // the upload is short of copies: the one left on the removed node stays
	if !tc.svcs[gone].store.has(up.ID) {
		t.Fatal("the sweep removed a copy while the upload was short of copies")
	}
	repair(stays)
	repair("n1")
	if got := tc.holders(up.ID); !slices.Equal(got, []string{"n1", stays}) || underCopied() != 0 {
		t.Fatalf("holders after the repair: %v, %v under-replicated", got, underCopied())
	}
	// The copy is the upload's bytes: n1's is gone, and n1 serves the repaired one.
	tc.svc.store.remove(up.ID)
	if resp, body := tc.do(http.MethodGet, tc.mediaPath(up), "", nil, nil); resp.StatusCode != http.StatusOK || !bytes.Equal(body, content) {
		t.Fatalf("served from the repaired copy: %d", resp.StatusCode)
	}
	// Once the upload has its copies again, the removed node's sweep drops the one it kept.
	sweep(gone)
	if tc.svcs[gone].store.has(up.ID) {
		t.Fatal("a copy no holder set names stayed")
	}
	// A pass with nothing to do changes nothing.
	if pending, err := tc.svcs[stays].Repair(context.Background()); err != nil || pending != 0 {
		t.Fatalf("idle repair: %d %v", pending, err)
	}
}

// TestRepairPassesOverADownServer: the server ranked first to take a copy is down (not yet
// removed): the next one takes it.
func TestRepairPassesOverADownServer(t *testing.T) {
	tc := newTestClusterOf(t, 2, "n1", "n2", "n3", "n4")
	_, up := tc.uploadRandom(1000)
	gone := tc.holders(up.ID)[1]
	var candidates []string
	for _, n := range []string{"n2", "n3", "n4"} {
		if n != gone {
			candidates = append(candidates, n)
		}
	}
	ranked := rank(up.ID, candidates)
	down, next := ranked[0], ranked[1]
	tc.mesh.mu.Lock()
	tc.mesh.servers = append([]string{"n1"}, candidates...)
	tc.mesh.down[gone], tc.mesh.down[down] = true, true
	tc.mesh.mu.Unlock()
	if pending, err := tc.svcs[next].Repair(context.Background()); err != nil || pending != 0 {
		t.Fatalf("repair on %s: %d %v", next, pending, err)
	}
	if got := tc.holders(up.ID); !slices.Contains(got, next) {
		t.Fatalf("holders with %s down: %v, want %s among them", down, got, next)
	}
}

// TestReceiveCopyRefusals: the copy route takes only members, a well-formed id and a body of
// exactly its declared length (at most the upload limit).
func TestReceiveCopyRefusals(t *testing.T) {
	tc := newTestCluster(t, 2)
	id := newID()
	base := tc.mesh.urls["n2"] + "/internal/v1/media/"
	put := func(path string, body io.Reader, length int64, member bool) int {
		req, _ := http.NewRequest(http.MethodPut, base+path, body)
		req.ContentLength = length
		if member {
			req.Header.Set("X-Test-Node", "member")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		name   string
		path   string
		body   string
		length int64
		member bool
		want   int
	}{
		{"not a member", id, "abc", 3, false, http.StatusForbidden},
		{"malformed id", "abc", "abc", 3, true, http.StatusBadRequest},
		{"no length (chunked)", id, "abc", -1, true, http.StatusRequestEntityTooLarge},
		{"stored", id, "abc", 3, true, http.StatusNoContent},
	} {
		if got := put(c.path, strings.NewReader(c.body), c.length, c.member); got != c.want {
			t.Fatalf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	r, err := tc.svcs["n2"].store.open(id)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(r)
	r.Close()
	if string(got) != "abc" {
		t.Fatalf("stored copy %q", got)
	}
	// A copy shorter or longer than it said is not kept.
	for _, body := range []string{"ab", "abcd"} {
		other := newID()
		if err := tc.svcs["n2"].storeCopy(other, 3, strings.NewReader(body)); !errors.Is(err, errShortCopy) || tc.svcs["n2"].store.has(other) {
			t.Fatalf("a copy of %d bytes said to be 3: %v", len(body), err)
		}
	}
}

// otherOf is the other one of n2 and n3.
func otherOf(node string) string { return map[string]string{"n2": "n3", "n3": "n2"}[node] }
