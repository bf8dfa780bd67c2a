package media_test

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/palaver-chat/palaver/gateway/media"
	"github.com/palaver-chat/palaver/node"
	"github.com/palaver-chat/palaver/raft"
	"github.com/palaver-chat/palaver/raft/fsm"
	fsmmedia "github.com/palaver-chat/palaver/raft/fsm/media"
	"github.com/palaver-chat/palaver/testcluster/irctest"
	"github.com/palaver-chat/palaver/testcluster/nodetest"
	"github.com/palaver-chat/palaver/testcluster/poll"
)

// nodeName is a node's name (its server DID without the method).
func nodeName(n *node.Node) string { return strings.TrimPrefix(n.ServerDID(), "did:web:") }

// holdersOn reads an upload's holder set from n's replica.
func holdersOn(n *node.Node, id string) []string {
	var set []string
	n.Machine().Read(func(st *fsm.State) {
		if o, ok := fsmmedia.Of(st).Object(id); ok {
			set = o.HolderSet()
		}
	})
	return set
}

// uploadOn posts content as a private upload to n and returns its URL path and id.
func uploadOn(t *testing.T, n *node.Node, token string, content []byte) (string, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("private", "1")
	w, _ := mw.CreateFormFile("file", "clip.bin")
	w.Write(content)
	mw.Close()
	req, _ := http.NewRequestWithContext(irctest.Ctx(t), http.MethodPost, "http://"+n.HTTPAddr()+"/api/v1/upload", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		URL string `json:"url"`
		ID  string `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("upload on %s: %d %v", nodeName(n), resp.StatusCode, err)
	}
	u, err := url.Parse(out.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Path, out.ID
}

// checkDownloads fetches path from n whole and by ranges and compares with content.
func checkDownloads(t *testing.T, n *node.Node, path string, content []byte) {
	t.Helper()
	get := func(rng string) (*http.Response, []byte) {
		req, _ := http.NewRequestWithContext(irctest.Ctx(t), http.MethodGet, "http://"+n.HTTPAddr()+path, nil)
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	size := len(content)
	if resp, body := get(""); resp.StatusCode != http.StatusOK {
		t.Fatalf("download on %s: %d %s", nodeName(n), resp.StatusCode, body)
	} else if !bytes.Equal(body, content) {
		t.Fatalf("download on %s: %d bytes of %d, not the upload", nodeName(n), len(body), size)
	}
	for _, c := range []struct {
		rng        string
		start, end int // inclusive
	}{
		{"bytes=65530-131080", 65530, 131080}, // across a chunk boundary
		{"bytes=-100", size - 100, size - 1},
		{"bytes=0-0", 0, 0},
	} {
		resp, body := get(c.rng)
		if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(body, content[c.start:c.end+1]) {
			t.Fatalf("range %s on %s: %d, %d bytes", c.rng, nodeName(n), resp.StatusCode, len(body))
		}
	}
}

// TestUploadOutlivesItsNode: an upload taken by one node of three is held by two before it is
// answered; once that node is gone for good the others serve it whole and by range, and after the
// node's removal from the Raft configuration the repair pass gives the upload its second copy
// back, so that it outlives the loss of the other original holder too.
func TestUploadOutlivesItsNode(t *testing.T) {
	nodes := nodetest.StartCluster(t, "media", func(c *node.Config) { c.DeadNodeGrace = 2 * time.Second })
	first := nodes[0]
	_, res := irctest.Login(t, first, "uploader")
	content := make([]byte, 200<<10+17)
	rand.Read(content)
	path, id := uploadOn(t, first, res.Token, content)

	// Answered only once two nodes hold the bytes: the record names both at once.
	holders := holdersOn(first, id)
	if len(holders) != 2 || !slices.Contains(holders, nodeName(first)) {
		t.Fatalf("holders after the upload: %v", holders)
	}
	var copyHolder, other *node.Node
	for _, n := range nodes[1:] {
		if slices.Contains(holders, nodeName(n)) {
			copyHolder = n
		} else {
			other = n
		}
	}
	if copyHolder == nil || other == nil {
		t.Fatalf("holders %v", holders)
	}

	first.Close()
	for _, n := range nodes[1:] {
		checkDownloads(t, n, path, content)
	}

	// The leader removes the dead node after its grace; the node ranked to take a copy takes it
	// and records itself, and the dead node leaves the holder set.
	want := []string{nodeName(copyHolder), nodeName(other)}
	slices.Sort(want)
	poll.Within(t, time.Minute, "the upload copied back to two servers", func() bool {
		for _, n := range nodes[1:] {
			for _, m := range n.RaftMembers() {
				if m.NodeID == nodeName(first) && m.Suffrage != raft.NotInConfiguration {
					return false
				}
			}
			if !slices.Equal(holdersOn(n, id), want) {
				return false
			}
		}
		return true
	})

	// The node that took the copy serves it from its own disk with its peer gone too.
	copyHolder.Close()
	checkDownloads(t, other, path, content)
}

// TestObjectStoreOutlivesItsNode: with --media-store, an upload taken by one node of three is
// served whole and by range by the others once that node is gone, from the object store alone.
func TestObjectStoreOutlivesItsNode(t *testing.T) {
	backend := s3mem.New()
	if err := backend.CreateBucket("palaver-media"); err != nil {
		t.Fatal(err)
	}
	s3 := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(s3.Close)
	secret := filepath.Join(t.TempDir(), "s3.secret")
	if err := os.WriteFile(secret, []byte("test-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	nodes := nodetest.StartCluster(t, "media-s3", func(c *node.Config) {
		c.Media.Store = "s3://palaver-media/uploads"
		c.Media.S3 = media.S3Options{Endpoint: strings.TrimPrefix(s3.URL, "http://"), AccessKey: "test",
			SecretKeyFile: secret, Insecure: true, PathStyle: true}
	})
	first := nodes[0]
	_, res := irctest.Login(t, first, "uploader")
	content := make([]byte, 200<<10+17)
	rand.Read(content)
	path, id := uploadOn(t, first, res.Token, content)
	if got := holdersOn(first, id); !slices.Equal(got, []string{nodeName(first)}) {
		t.Fatalf("holders with an object store: %v", got)
	}
	first.Close()
	for _, n := range nodes[1:] {
		checkDownloads(t, n, path, content)
	}
}
