package media

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestUploadAddressBudget: many DIDs from one address stop at the address's hourly budget (429
// with Retry-After), although each DID is far below its quota.
func TestUploadAddressBudget(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Options.AddressBytes = 1 << 20 })
	if resp, _ := f.upload("tok-alice", "a.bin", make([]byte, 600<<10), nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("first: %d", resp.StatusCode)
	}
	resp, _ := f.upload("tok-bob", "b.bin", make([]byte, 600<<10), nil)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("another DID from the same address: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if objects, _ := f.stored(); objects != 1 {
		t.Fatalf("%d objects stored", objects)
	}
	// A refused upload does not use the budget up.
	if resp, _ := f.upload("tok-carol", "c.bin", make([]byte, 300<<10), nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("within what is left: %d", resp.StatusCode)
	}
}

// TestUploadTotalBudget: DIDs from many addresses stop at the deployment's budget (507).
func TestUploadTotalBudget(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Options.TotalBytes = 1 << 20 })
	if resp, _ := f.upload("tok-alice", "a.bin", make([]byte, 600<<10), nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("first: %d", resp.StatusCode)
	}
	if resp, _ := f.upload("tok-bob", "b.bin", make([]byte, 600<<10), nil); resp.StatusCode != http.StatusInsufficientStorage {
		t.Fatalf("past the deployment's budget: %d", resp.StatusCode)
	}
	if objects, _ := f.stored(); objects != 1 {
		t.Fatalf("%d objects stored", objects)
	}
}

// TestUploadFreeDiskFloor: an upload that would leave less than the floor free is refused 507
// before it fills the disk.
func TestUploadFreeDiskFloor(t *testing.T) {
	var free atomic.Int64
	free.Store(1 << 30)
	f := newFixture(t, func(c *Config) {
		c.Options.MinFreeBytes = 100 << 20
		c.FreeBytes = func(string) (int64, error) { return free.Load(), nil }
	})
	if resp, _ := f.upload("tok-alice", "a.bin", make([]byte, 600<<10), nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("with room: %d", resp.StatusCode)
	}
	free.Store(100<<20 + 100<<10)
	if resp, _ := f.upload("tok-alice", "b.bin", make([]byte, 600<<10), nil); resp.StatusCode != http.StatusInsufficientStorage {
		t.Fatalf("below the floor: %d", resp.StatusCode)
	}
	if objects, tmp := f.stored(); objects != 1 || tmp != 0 {
		t.Fatalf("%d objects, %d temporary", objects, tmp)
	}
	if n, err := freeBytes(t.TempDir()); err != nil || n <= 0 {
		t.Fatalf("statfs: %d, %v", n, err)
	}
}

// TestDeleteUpload: the uploader and a server operator delete an upload; its URL stops
// answering and its bytes leave the disk; anyone else is refused with the Error object.
func TestDeleteUpload(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.OperDIDs = []string{didCarol} })
	_, a := f.upload("tok-alice", "a.txt", []byte("alice's"), nil)
	_, b := f.upload("tok-bob", "b.txt", []byte("bob's"), nil)
	path := func(u string) string { return u[strings.Index(u, "/api/"):] }
	resp, body := f.do(http.MethodDelete, "/api/v1/media/"+a.ID, "tok-bob", nil, nil)
	var e map[string]any
	if resp.StatusCode != http.StatusForbidden || json.Unmarshal(body, &e) != nil || e["status"] != float64(403) {
		t.Fatalf("someone else: %d %s", resp.StatusCode, body)
	}
	if resp, _ := f.do(http.MethodDelete, "/api/v1/media/"+a.ID, "", nil, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("anonymous: %d", resp.StatusCode)
	}
	if resp, _ := f.do(http.MethodDelete, "/api/v1/media/"+a.ID, "tok-alice", nil, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("the uploader: %d", resp.StatusCode)
	}
	if resp, _ := f.do(http.MethodGet, path(a.URL), "", nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a deleted upload answers %d", resp.StatusCode)
	}
	if resp, _ := f.do(http.MethodDelete, "/api/v1/media/"+a.ID, "tok-alice", nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("twice: %d", resp.StatusCode)
	}
	if resp, _ := f.do(http.MethodDelete, "/api/v1/media/"+b.ID, "tok-carol", nil, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("an operator: %d", resp.StatusCode)
	}
	if objects, _ := f.stored(); objects != 0 {
		t.Fatalf("%d objects left on disk", objects)
	}
}

// TestMediaRetention: with a retention, the holder's sweep deletes older uploads, record and bytes.
func TestMediaRetention(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	f := newFixture(t, func(c *Config) {
		c.Options.Retention = time.Hour
		c.Now = func() time.Time { return time.Unix(0, now.Load()) }
	})
	_, a := f.upload("tok-alice", "a.txt", []byte("old"), nil)
	if err := f.svc.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if objects, _ := f.stored(); objects != 1 {
		t.Fatal("a young upload was swept")
	}
	now.Add(int64(2 * time.Hour))
	if err := f.svc.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if objects, _ := f.stored(); objects != 0 {
		t.Fatalf("%d objects left after the retention", objects)
	}
	if resp, _ := f.do(http.MethodGet, a.URL[strings.Index(a.URL, "/api/"):], "", nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("an expired upload answers %d", resp.StatusCode)
	}
}
