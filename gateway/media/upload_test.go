package media

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/raft/fsm"
	fsmmedia "github.com/palaver-chat/palaver/raft/fsm/media"
)

func pngBytes(t *testing.T, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// local strips the base URL from a URL the service minted.
func local(u string) string { return strings.TrimPrefix(u, "http://palaver.test") }

// stored counts the files in the media directory's objects and tmp.
func (f *fixture) stored() (objects, tmp int) {
	o, _ := os.ReadDir(filepath.Join(f.svc.opts.Dir, "objects"))
	tm, _ := os.ReadDir(filepath.Join(f.svc.opts.Dir, "tmp"))
	return len(o), len(tm)
}

func TestUploadPublicAndPrivate(t *testing.T) {
	f := newFixture(t, nil)
	img := pngBytes(t, 3, 2)
	resp, pub := f.upload("tok-alice", "../../shot.png", img, nil)
	if resp.StatusCode != http.StatusOK || pub.Private || pub.ContentType != "image/png" || pub.Width != 3 || pub.Height != 2 ||
		pub.Filename != "shot.png" || pub.Size != int64(len(img)) {
		t.Fatalf("public upload: %d %+v", resp.StatusCode, pub)
	}
	if pub.Tags["media-url"] != pub.URL || pub.Tags["media-mime"] != "image/png" || pub.Tags["media-w"] != "3" ||
		pub.Tags["media-h"] != "2" || pub.Tags["media-size"] != fmt.Sprint(len(img)) || pub.Tags["media-filename"] != "shot.png" {
		t.Fatalf("tags %v", pub.Tags)
	}
	if want := "http://palaver.test/api/v1/media/" + pub.ID + "/shot.png"; pub.URL != want {
		t.Fatalf("public URL %s, want %s", pub.URL, want)
	}
	resp, body := f.do("GET", local(pub.URL), "", nil, nil)
	if resp.StatusCode != 200 || !bytes.Equal(body, img) || resp.Header.Get("Content-Type") != "image/png" ||
		resp.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "inline") {
		t.Fatalf("public download: %d %v", resp.StatusCode, resp.Header)
	}

	// A client's claimed type is ignored: HTML is sniffed and served as plain text, as a download.
	html := []byte("<html><script>alert(1)</script></html>")
	resp, priv := f.upload("tok-alice", "page.html", html, map[string]string{"private": "true"})
	if resp.StatusCode != 200 || !priv.Private || !strings.HasPrefix(priv.ContentType, "text/html") {
		t.Fatalf("private upload: %d %+v", resp.StatusCode, priv)
	}
	sig := capability(f.svc.capKey(), priv.ID)
	if want := "http://palaver.test/api/v1/media/" + priv.ID + "/" + sig + "/page.html"; priv.URL != want {
		t.Fatalf("capability URL %s, want %s", priv.URL, want)
	}
	resp, body = f.do("GET", local(priv.URL), "", nil, nil)
	if resp.StatusCode != 200 || !bytes.Equal(body, html) || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" ||
		!strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("private download: %d %v", resp.StatusCode, resp.Header)
	}
	// The file name is cosmetic.
	if resp, body := f.do("GET", "/api/v1/media/"+priv.ID+"/"+sig+"/other.bin", "", nil, nil); resp.StatusCode != 200 || !bytes.Equal(body, html) {
		t.Fatalf("other file name: %d", resp.StatusCode)
	}
	// Ranges.
	for _, tc := range []struct {
		rng    string
		status int
		want   []byte
	}{{"bytes=0-5", 206, html[:6]}, {"bytes=6-", 206, html[6:]}, {"bytes=-4", 206, html[len(html)-4:]}, {"bytes=1000-", 416, nil}} {
		resp, body := f.do("GET", local(priv.URL), "", nil, http.Header{"Range": {tc.rng}})
		if resp.StatusCode != tc.status || (tc.want != nil && !bytes.Equal(body, tc.want)) {
			t.Errorf("Range %s: %d %q", tc.rng, resp.StatusCode, body)
		}
	}
	// The private upload is not served without its capability, nor with a tampered one.
	otherID := newID()
	for _, tc := range []struct {
		path   string
		status int
	}{
		{"/api/v1/media/" + priv.ID + "/page.html", 403},
		{"/api/v1/media/" + priv.ID + "/" + sig[:len(sig)-2] + "AA/page.html", 403},
		{"/api/v1/media/" + otherID + "/" + sig + "/page.html", 403},
		{"/api/v1/media/" + priv.ID + "/" + capability(f.svc.capKey(), otherID) + "/page.html", 403},
		{"/api/v1/media/" + otherID + "/" + capability(f.svc.capKey(), otherID) + "/x", 404},
		{"/api/v1/media/" + otherID + "/x", 404},
		{"/api/v1/media/..%2F..%2Fmaster.key/x", 404},
	} {
		if resp, _ := f.do("GET", tc.path, "", nil, nil); resp.StatusCode != tc.status {
			t.Errorf("GET %s: %d, want %d", tc.path, resp.StatusCode, tc.status)
		}
	}
}

func TestUploadToChannels(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		name, token, channel string
		status               int
		private              bool
	}{
		{"member of a public channel", "tok-bob", "pub", 200, false},
		{"member of a restricted channel", "tok-bob", "#priv", 200, true},
		{"not a member", "tok-carol", "#priv", 403, false},
		{"unknown channel", "tok-bob", "#nope", 404, false},
		{"bad channel name", "tok-bob", "#a b", 400, false},
	} {
		resp, out := f.upload(tc.token, "a.txt", []byte("hello"), map[string]string{"channel": tc.channel})
		if resp.StatusCode != tc.status || (tc.status == 200 && out.Private != tc.private) {
			t.Errorf("%s: %d %+v", tc.name, resp.StatusCode, out)
		}
	}
	if objects, tmp := f.stored(); objects != 2 || tmp != 0 {
		t.Errorf("%d objects, %d temporary files; want 2, 0", objects, tmp)
	}
}

// rawPost sends a body with a given declared length over a raw connection, so that the client
// can lie about it, and returns the status line.
func rawPost(t *testing.T, f *fixture, contentType string, declared int, body []byte) int {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v1/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok-alice\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", contentType, declared)
	go conn.Write(body)
	resp, err := http.ReadResponse(bufioReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func TestUploadRefusals(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Options.QuotaBytes = 20 << 20 })
	big := make([]byte, MaxUploadBytes+10)
	rand.Read(big)
	bigBody, bigType := multipartBody(t, "big.bin", big, nil)
	small, smallType := multipartBody(t, "s.bin", []byte("0123456789"), nil)
	truncated := small.Bytes()[:small.Len()-20]
	noFile, noFileType := multipartBody(t, "", nil, map[string]string{"alt": "x"})
	for _, tc := range []struct {
		name   string
		send   func() int
		status int
	}{
		{"no bearer", func() int {
			r, _ := f.do("POST", "/api/v1/upload", "", bytes.NewReader(small.Bytes()), http.Header{"Content-Type": {smallType}})
			return r.StatusCode
		}, 401},
		{"over 12 MB, honest length", func() int {
			r, _ := f.do("POST", "/api/v1/upload", "tok-alice", bytes.NewReader(bigBody.Bytes()), http.Header{"Content-Type": {bigType}})
			return r.StatusCode
		}, 413},
		{"over 12 MB, chunked", func() int {
			r, _ := f.do("POST", "/api/v1/upload", "tok-alice", io.MultiReader(bytes.NewReader(bigBody.Bytes())), http.Header{"Content-Type": {bigType}})
			return r.StatusCode
		}, 413},
		{"over 12 MB, understated length", func() int { return rawPost(t, f, bigType, 1000, bigBody.Bytes()) }, 400},
		{"truncated multipart", func() int {
			r, _ := f.do("POST", "/api/v1/upload", "tok-alice", bytes.NewReader(truncated), http.Header{"Content-Type": {smallType}})
			return r.StatusCode
		}, 400},
		{"no file part", func() int {
			r, _ := f.do("POST", "/api/v1/upload", "tok-alice", bytes.NewReader(noFile.Bytes()), http.Header{"Content-Type": {noFileType}})
			return r.StatusCode
		}, 400},
		{"not multipart", func() int {
			r, _ := f.do("POST", "/api/v1/upload", "tok-alice", strings.NewReader("{}"), http.Header{"Content-Type": {"application/json"}})
			return r.StatusCode
		}, 400},
		{"did of another", func() int {
			r, _ := f.upload("tok-alice", "a", []byte("x"), map[string]string{"did": didBob})
			return r.StatusCode
		}, 403},
	} {
		if got := tc.send(); got != tc.status {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.status)
		}
	}
	if objects, tmp := f.stored(); objects != 0 || tmp != 0 {
		t.Errorf("refused uploads left %d objects and %d temporary files", objects, tmp)
	}
	// The quota counts what a DID has stored: two 8 MB uploads fit in 20 MB, a third does not.
	chunk := make([]byte, 8<<20)
	for i, want := range []int{200, 200, 413} {
		if resp, _ := f.upload("tok-alice", "q.bin", chunk, nil); resp.StatusCode != want {
			t.Fatalf("upload %d: %d, want %d", i, resp.StatusCode, want)
		}
	}
	if resp, _ := f.upload("tok-bob", "q.bin", chunk, nil); resp.StatusCode != 200 {
		t.Fatalf("another DID's quota: %d", resp.StatusCode)
	}
	if objects, tmp := f.stored(); objects != 3 || tmp != 0 {
		t.Errorf("%d objects, %d temporary files; want 3, 0", objects, tmp)
	}
	var usage int64
	f.machine.Read(func(st *fsm.State) { usage = fsmmedia.Of(st).Usage(didAlice) })
	if usage != 16<<20 {
		t.Errorf("alice's usage %d", usage)
	}
}

func TestUploadDiskCap(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Options.DiskBytes = 1 << 20 })
	if resp, _ := f.upload("tok-alice", "a.bin", make([]byte, 600<<10), nil); resp.StatusCode != 200 {
		t.Fatalf("first: %d", resp.StatusCode)
	}
	if resp, _ := f.upload("tok-alice", "b.bin", make([]byte, 600<<10), nil); resp.StatusCode != http.StatusInsufficientStorage {
		t.Fatalf("over the disk cap: %d", resp.StatusCode)
	}
	if objects, tmp := f.stored(); objects != 1 || tmp != 0 {
		t.Errorf("%d objects, %d temporary files", objects, tmp)
	}
	var e map[string]any
	_, body := f.do("GET", "/api/v1/media/x/y/z", "", nil, nil)
	if json.Unmarshal(body, &e) != nil || e["status"] != float64(403) {
		t.Errorf("error object: %s", body)
	}
}

// A client that goes away in the middle of its upload leaves nothing on disk.
func TestUploadInterrupted(t *testing.T) {
	f := newFixture(t, nil)
	body, ct := multipartBody(t, "half.bin", make([]byte, 1<<20), nil)
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST /api/v1/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok-alice\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", ct, body.Len())
	conn.Write(body.Bytes()[:body.Len()/2])
	// Wait until the upload is being written, then cut the connection.
	deadline := time.Now().Add(10 * time.Second)
	for _, tmp := f.stored(); tmp == 0; _, tmp = f.stored() {
		if time.Now().After(deadline) {
			t.Fatal("the upload never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	conn.Close()
	for objects, tmp := f.stored(); objects+tmp > 0; objects, tmp = f.stored() {
		if time.Now().After(deadline) {
			t.Fatalf("an interrupted upload left %d objects and %d temporary files", objects, tmp)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := f.counter("palaver_media_uploads_total", "bad_request"); got != 1 {
		t.Errorf("interrupted upload counted %v times as bad_request", got)
	}
}
