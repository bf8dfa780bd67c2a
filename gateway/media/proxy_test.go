package media

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/raft/fsm"
)

func TestBlobAllowList(t *testing.T) {
	s := &Service{opts: Options{BlobOrigins: []string{"https://pds.example.org"}}}
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://morel.us-east.host.bsky.network/xrpc/com.atproto.sync.getBlob?did=did:plc:x&cid=baf", true},
		{"https://bsky.social/xrpc/com.atproto.sync.getBlob?did=did:plc:x&cid=baf", true},
		{"https://cdn.bsky.app/img/feed_thumbnail/plain/did:plc:x/baf@jpeg", true},
		{"https://pds.example.org/xrpc/com.atproto.sync.getBlob?did=did:plc:x&cid=baf", true},
		{"http://bsky.social/xrpc/com.atproto.sync.getBlob?did=d&cid=c", false},
		{"https://bsky.social:8443/xrpc/com.atproto.sync.getBlob?did=d&cid=c", false},
		{"https://bsky.social/xrpc/com.atproto.repo.getRecord?repo=d", false},
		{"https://evilbsky.network/xrpc/com.atproto.sync.getBlob?did=d&cid=c", false},
		{"https://bsky.network.evil.com/xrpc/com.atproto.sync.getBlob?did=d&cid=c", false},
		{"https://example.com/xrpc/com.atproto.sync.getBlob?did=d&cid=c", false},
		{"https://pds.example.org/other?x=1", false},
		{"https://bsky.social/xrpc/com.atproto.sync.getBlob", false},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.blobAllowed(u); got != tc.ok {
			t.Errorf("blobAllowed(%s) = %v", tc.url, got)
		}
	}
}

// pds is a loopback PDS: getBlob serves blob (honouring Range, with an attachment disposition),
// getRecord serves records.
type pds struct {
	srv     *httptest.Server
	blob    []byte
	records map[string]string // rkey → record JSON
	hits    atomic.Int32
}

func newPDS(t *testing.T, blob []byte) *pds {
	p := &pds{blob: blob, records: map[string]string{}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.hits.Add(1)
		switch r.URL.Path {
		case getBlobPath:
			if r.URL.Query().Get("cid") == "bafmissing0" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "image/png")
			w.Header().Set("Content-Disposition", `attachment; filename="x.png"`)
			http.ServeContent(w, r, "", timeZero, strings.NewReader(string(p.blob)))
		case "/xrpc/com.atproto.repo.getRecord":
			rec, ok := p.records[r.URL.Query().Get("rkey")]
			if !ok {
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, `{"error":"RecordNotFound"}`)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, rec)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func TestBlobProxy(t *testing.T) {
	blob := pngBytes(t, 4, 4)
	p := newPDS(t, blob)
	f := newFixture(t, func(c *Config) { c.Options.BlobOrigins = []string{p.srv.URL} })
	blobURL := p.srv.URL + getBlobPath + "?did=did:plc:x&cid=bafblob0001"
	q := func(raw string) string { return "/api/v1/blob?url=" + url.QueryEscape(raw) }
	resp, body := f.do("GET", q(blobURL), "", nil, nil)
	if resp.StatusCode != 200 || string(body) != string(blob) || resp.Header.Get("Content-Disposition") != "" ||
		resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("blob: %d %v", resp.StatusCode, resp.Header)
	}
	resp, body = f.do("GET", q(blobURL), "", nil, http.Header{"Range": {"bytes=0-3"}})
	if resp.StatusCode != 206 || string(body) != string(blob[:4]) || resp.Header.Get("Content-Range") == "" {
		t.Fatalf("blob range: %d %q", resp.StatusCode, body)
	}
	// A mime hint that is not a media type is not believed.
	resp, _ = f.do("GET", q(blobURL)+"&mime="+url.QueryEscape("text/html"), "", nil, nil)
	if resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("mime hint: %v", resp.Header.Get("Content-Type"))
	}
	for _, tc := range []struct {
		raw    string
		status int
	}{
		{p.srv.URL + getBlobPath + "?did=did:plc:x&cid=bafmissing0", 404},
		{"", 400},
		{"file:///etc/passwd", 400},
		{"gopher://bsky.social/", 400},
		{"http://169.254.169.254/latest/meta-data/", 400},
		{"https://example.com/xrpc/com.atproto.sync.getBlob?did=d&cid=c", 400},
		{strings.Replace(blobURL, "127.0.0.1", "[::1]", 1), 400},
	} {
		if resp, _ := f.do("GET", q(tc.raw), "", nil, nil); resp.StatusCode != tc.status {
			t.Errorf("blob %q: %d, want %d", tc.raw, resp.StatusCode, tc.status)
		}
	}
}

func TestLinkPreview(t *testing.T) {
	var hits atomic.Int32
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/og":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, `<!doctype html><html><head><title>Fallback</title>
<meta property="og:title" content="The &amp; Title"><meta property="og:description" content="Desc">
<meta property="og:image" content="/img.png"><meta property="og:site_name" content="Site">
<meta property="og:image" content="/second.png"></head><body><meta property="og:title" content="late"></body></html>`)
		case "/plain":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `<html><head><title> Plain title </title><meta name="description" content="meta desc"></head></html>`)
		case "/json":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{}`)
		case "/redirect-private":
			http.Redirect(w, r, "http://10.0.0.1/", http.StatusFound)
		case "/big":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html><head>"+strings.Repeat("<meta name=x content=y>", 100000)+`<title>late</title></head>`)
		}
	}))
	defer site.Close()
	f := newFixture(t, nil)
	get := func(path string) (*http.Response, map[string]any) {
		resp, body := f.do("GET", "/api/v1/og?url="+url.QueryEscape(site.URL+path), "", nil, nil)
		var out map[string]any
		json.Unmarshal(body, &out)
		return resp, out
	}
	resp, og := get("/og")
	if resp.StatusCode != 200 || og["title"] != "The & Title" || og["description"] != "Desc" || og["image"] != site.URL+"/img.png" ||
		og["site_name"] != "Site" || og["url"] != site.URL+"/og" {
		t.Fatalf("og: %d %v", resp.StatusCode, og)
	}
	before := hits.Load()
	if resp, again := get("/og"); resp.StatusCode != 200 || again["title"] != "The & Title" || hits.Load() != before {
		t.Fatalf("cached preview fetched again (%d hits)", hits.Load()-before)
	}
	if resp, plain := get("/plain"); resp.StatusCode != 200 || plain["title"] != "Plain title" || plain["description"] != "meta desc" {
		t.Fatalf("fallbacks: %v", plain)
	}
	if resp, big := get("/big"); resp.StatusCode != 200 || big["title"] != "" {
		t.Fatalf("past the size bound: %d %v", resp.StatusCode, big)
	}
	for _, tc := range []struct {
		raw    string
		status int
	}{
		{site.URL + "/json", 502},
		{site.URL + "/redirect-private", 400},
		{"", 400},
		{"not a url", 400},
		{"file:///etc/passwd", 400},
		{"http://2130706433/", 400},
		{"http://[::ffff:10.0.0.1]:1/", 400}, {"http://169.254.169.254/latest/", 400}, {"gopher://example.com/", 400},
	} {
		if resp, _ := f.do("GET", "/api/v1/og?url="+url.QueryEscape(tc.raw), "", nil, nil); resp.StatusCode != tc.status {
			t.Errorf("og %q: %d, want %d", tc.raw, resp.StatusCode, tc.status)
		}
	}
}

func TestPreviewCacheLRU(t *testing.T) {
	c := newPreviewCache(2, previewTTL)
	now := timeZero
	c.put("a", Preview{Title: "a"}, now)
	c.put("b", Preview{Title: "b"}, now)
	c.get("a", now)
	c.put("c", Preview{Title: "c"}, now)
	if _, ok := c.get("b", now); ok {
		t.Error("least recently used entry kept")
	}
	if _, ok := c.get("a", now); !ok {
		t.Error("recently used entry dropped")
	}
	if _, ok := c.get("c", now.Add(previewTTL+1)); ok {
		t.Error("expired entry served")
	}
}

// mapPDS resolves DIDs from a table: the DID documents are not what these tests are about.
type mapPDS map[string]string

func (m mapPDS) PDS(_ context.Context, did string) (string, error) {
	if u, ok := m[did]; ok {
		return u, nil
	}
	return "", fmt.Errorf("unknown DID %s", did)
}

func TestMediaSpaces(t *testing.T) {
	var created atomic.Int32
	authority := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]string
		if r.Method != "POST" || r.URL.Path != "/spaces" || json.NewDecoder(r.Body).Decode(&req) != nil || req["channel"] == "" {
			http.Error(w, "bad", 400)
			return
		}
		n := created.Add(1)
		json.NewEncoder(w).Encode(map[string]string{"ref": fmt.Sprintf("space-%d-%s", n, req["channel"]), "type": "freeq.space"})
	}))
	defer authority.Close()
	blob := pngBytes(t, 2, 2)
	p := newPDS(t, blob)
	const uploader = "did:plc:uploader"
	f := newFixture(t, func(c *Config) {
		c.Options.SpaceAuthority = authority.URL
		c.Options.MaxSpaces = 2
		c.PDS = mapPDS{uploader: p.srv.URL}
	})
	space := func(token, channel string) (*http.Response, map[string]any) {
		resp, body := f.do("GET", "/api/v1/media-space?channel="+url.QueryEscape(channel), token, nil, nil)
		var out map[string]any
		json.Unmarshal(body, &out)
		return resp, out
	}
	resp, sp := space("tok-bob", "#priv")
	if resp.StatusCode != 200 || sp["ref"] != "space-1-#priv" || sp["type"] != "freeq.space" {
		t.Fatalf("space: %d %v", resp.StatusCode, sp)
	}
	if resp, again := space("tok-alice", "priv"); resp.StatusCode != 200 || again["ref"] != sp["ref"] || created.Load() != 1 {
		t.Fatalf("second ask: %v (authority asked %d times)", again, created.Load())
	}
	for _, tc := range []struct {
		token, channel string
		status         int
	}{{"", "#priv", 401}, {"tok-carol", "#priv", 403}, {"tok-bob", "#nope", 404}, {"tok-bob", "", 400}} {
		if resp, _ := space(tc.token, tc.channel); resp.StatusCode != tc.status {
			t.Errorf("space %q by %q: %d, want %d", tc.channel, tc.token, resp.StatusCode, tc.status)
		}
	}
	// The maximum: #pub makes two, a third channel is refused.
	f.mustOK(fsm.Join{Session: "s-carol", Channel: "#third"})
	if resp, _ := space("tok-bob", "#pub"); resp.StatusCode != 200 {
		t.Fatalf("second space: %d", resp.StatusCode)
	}
	if resp, _ := space("tok-carol", "#third"); resp.StatusCode != http.StatusInsufficientStorage {
		t.Fatalf("past the maximum: %d", resp.StatusCode)
	}

	// Space media: a record in #priv's space, readable by its members only.
	p.records["rk1"] = `{"uri":"at://did:plc:uploader/at.freeq.media/rk1","value":{"space":"space-1-#priv","blob":{"$type":"blob","ref":{"$link":"bafblob0001"},"mimeType":"image/png","size":10}}}`
	p.records["rk2"] = `{"value":{"space":"space-9-unknown","blob":{"ref":{"$link":"bafblob0001"},"mimeType":"image/png"}}}`
	ref := func(uri string) string { return base64.RawURLEncoding.EncodeToString([]byte(uri)) }
	good := "/api/v1/space-media/" + ref("at://"+uploader+"/at.freeq.media/rk1") + "/pic.png"
	resp, body := f.do("GET", good, "tok-bob", nil, nil)
	if resp.StatusCode != 200 || string(body) != string(blob) || resp.Header.Get("Content-Disposition") != "" {
		t.Fatalf("space media: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, body := f.do("GET", good, "tok-bob", nil, http.Header{"Range": {"bytes=1-2"}}); resp.StatusCode != 206 || string(body) != string(blob[1:3]) {
		t.Fatalf("space media range: %d", resp.StatusCode)
	}
	for _, tc := range []struct {
		name, path, token string
		status            int
	}{
		{"no bearer", good, "", 401},
		{"not a member", good, "tok-carol", 403},
		{"unknown record", "/api/v1/space-media/" + ref("at://"+uploader+"/at.freeq.media/nope") + "/x", "tok-bob", 404},
		{"record of another space", "/api/v1/space-media/" + ref("at://"+uploader+"/at.freeq.media/rk2") + "/x", "tok-bob", 404},
		{"unknown DID", "/api/v1/space-media/" + ref("at://did:plc:other/at.freeq.media/rk1") + "/x", "tok-bob", 404},
		{"not base64", "/api/v1/space-media/%2A%2A/x", "tok-bob", 400},
		{"not at://", "/api/v1/space-media/" + ref("https://example.com/a/b") + "/x", "tok-bob", 400},
		{"path tricks", "/api/v1/space-media/" + ref("at://"+uploader+"/../../x") + "/x", "tok-bob", 400},
	} {
		if resp, _ := f.do("GET", tc.path, tc.token, nil, nil); resp.StatusCode != tc.status {
			t.Errorf("%s: %d, want %d", tc.name, resp.StatusCode, tc.status)
		}
	}
}

func TestMediaSpacesOff(t *testing.T) {
	f := newFixture(t, nil)
	if resp, _ := f.do("GET", "/api/v1/media-space?channel=%23pub", "tok-bob", nil, nil); resp.StatusCode != 404 {
		t.Fatalf("without an authority: %d", resp.StatusCode)
	}
}

var timeZero = time.Unix(1_700_000_000, 0)
