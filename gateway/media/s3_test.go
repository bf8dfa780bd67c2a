package media

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// fakeS3 starts an in-process S3 API with a bucket "media" and returns the options of a store
// under s3://media/uploads on it.
func fakeS3(t *testing.T) (string, S3Options) {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket("media"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("test-secret-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return "s3://media/uploads", S3Options{Endpoint: strings.TrimPrefix(srv.URL, "http://"), AccessKey: "test-access-key",
		SecretKeyFile: secret, Insecure: true, PathStyle: true}
}

// rawObject reads an object's stored bytes from the bucket.
func rawObject(t *testing.T, svc *Service, id string) ([]byte, error) {
	t.Helper()
	b := svc.store.blobs.(*s3Blobs)
	obj, err := b.c.GetObject(context.Background(), b.bucket, b.prefix+id, minio.GetObjectOptions{})
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	return io.ReadAll(obj)
}

// TestObjectStore: with --media-store an upload is one object in the bucket, sealed before it
// leaves the node; it downloads whole and by range; another node with its own master key reads
// it from the store alone; deleting the upload deletes the object; the sweep removes objects no
// record names.
func TestObjectStore(t *testing.T) {
	storeURL, s3opts := fakeS3(t)
	f := newFixture(t, func(c *Config) { c.Options.Store, c.Options.S3 = storeURL, s3opts })
	content := make([]byte, 3*chunkSize+100)
	rand.Read(content)
	copy(content[1000:], "a plaintext marker that must not reach the store")
	resp, up := f.upload("tok-alice", "clip.bin", content, map[string]string{"private": "1"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("upload: %d", resp.StatusCode)
	}
	raw, err := rawObject(t, f.svc, up.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(raw, []byte(magic)) || int64(len(raw)) != bytesOnDisk(int64(len(content))) ||
		bytes.Contains(raw, []byte("a plaintext marker")) {
		t.Fatalf("stored object: %d bytes, want %d sealed", len(raw), bytesOnDisk(int64(len(content))))
	}
	for _, sub := range []string{"objects", "tmp"} {
		if entries, _ := os.ReadDir(filepath.Join(f.svc.store.dir, sub)); len(entries) != 0 {
			t.Fatalf("%s on the node's disk holds %d files", sub, len(entries))
		}
	}
	u, _ := url.Parse(up.URL)
	if resp, body := f.do(http.MethodGet, u.Path, "", nil, nil); resp.StatusCode != http.StatusOK || !bytes.Equal(body, content) {
		t.Fatalf("download: %d, %d bytes", resp.StatusCode, len(body))
	}
	resp, body := f.do(http.MethodGet, u.Path, "", nil, http.Header{"Range": {"bytes=65530-131080, 196000-"}})
	if resp.StatusCode != http.StatusPartialContent || !bytes.Contains(body, content[65530:131081]) || !bytes.Contains(body, content[196000:]) {
		t.Fatalf("ranges: %d, %d bytes", resp.StatusCode, len(body))
	}

	// Another node: its own directory and master key, the same state and store.
	other, err := New(Config{Options: Options{Dir: t.TempDir(), Store: storeURL, S3: s3opts}, Node: "n2",
		BaseURL: "http://palaver.test", State: f.machine, Proposer: f})
	if err != nil {
		t.Fatal(err)
	}
	r, err := other.store.open(up.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("read by another node: %d bytes, %v", len(got), err)
	}

	if resp, _ := f.do(http.MethodDelete, "/api/v1/media/"+up.ID, "tok-alice", nil, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	if _, err := rawObject(t, f.svc, up.ID); !notFound(err) {
		t.Fatalf("the deleted upload's object: %v", err)
	}
	if _, err := other.store.open(up.ID); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("open of a deleted object: %v", err)
	}

	// An object no record names (an upload whose record was never applied) goes at the sweep,
	// once old enough.
	orphan := newID()
	put(t, f.svc.store, orphan, []byte("orphan"), 6)
	if err := f.svc.Sweep(context.Background()); err != nil || !f.svc.store.has(orphan) {
		t.Fatalf("a fresh orphan swept: %v", err)
	}
	f.svc.cfg.Now = func() time.Time { return time.Now().Add(orphanAge + time.Minute) }
	if err := f.svc.Sweep(context.Background()); err != nil || f.svc.store.has(orphan) {
		t.Fatalf("an old orphan kept: %v", err)
	}
}

// TestObjectStoreOptions: a malformed store URL, a missing bucket, a missing secret key file and
// an unreachable store stop the service from starting.
func TestObjectStoreOptions(t *testing.T) {
	storeURL, s3opts := fakeS3(t)
	noSecret := s3opts
	noSecret.SecretKeyFile = filepath.Join(t.TempDir(), "missing")
	unreachable := s3opts
	unreachable.Endpoint = "127.0.0.1:1"
	for _, c := range []struct {
		name  string
		store string
		opts  S3Options
	}{
		{"not s3", "https://media/uploads", s3opts},
		{"no bucket", "s3:///uploads", s3opts},
		{"query", "s3://media/uploads?x=1", s3opts},
		{"bad bucket name", "s3://Media_Bucket/uploads", s3opts},
		{"empty segment", "s3://media/a//b", s3opts},
		{"dot dot", "s3://media/a/../b", s3opts},
		{"missing bucket", "s3://other/uploads", s3opts},
		{"missing secret key file", storeURL, noSecret},
		{"unreachable", storeURL, unreachable},
	} {
		if _, err := New(Config{Options: Options{Dir: t.TempDir(), Store: c.store, S3: c.opts}, Node: "n1",
			State: fsm.New(nil)}); err == nil {
			t.Errorf("%s: started", c.name)
		}
	}
	for in, want := range map[string][2]string{
		"s3://media":         {"media", ""},
		"s3://media/":        {"media", ""},
		"s3://media/a/b/":    {"media", "a/b/"},
		"s3://media/uploads": {"media", "uploads/"},
	} {
		bucket, prefix, err := parseStoreURL(in)
		if err != nil || bucket != want[0] || prefix != want[1] {
			t.Errorf("%s: %q %q %v", in, bucket, prefix, err)
		}
	}
}
