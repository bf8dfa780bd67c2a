package node

import (
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestHEADOnEveryGETRoute: HEAD on each GET route a node mounts (documents, REST, signing keys,
// the contract, media) answers GET's status and headers without a body (RFC 9110 §9.3.2).
func TestHEADOnEveryGETRoute(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	base := "http://" + n.HTTPAddr()
	alice, ares := login(t, n, "alice", "message-tags")
	joinChannels(t, alice, "#head")
	sendLines(t, alice, "PRIVMSG #head :hello")
	status, up := uploadTo(t, n, ares.Token, []byte(strings.Repeat("media bytes ", 400)), map[string]string{"private": "1"})
	if status != http.StatusOK {
		t.Fatalf("upload: %d", status)
	}
	media, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	params := map[string]string{
		"name": "%23head", "channel": "head", "nick": "alice", "did": url.PathEscape(ares.DID),
	}
	var paths []string
	for _, r := range n.rest.Engine().Routes() {
		if r.Method != http.MethodGet {
			continue
		}
		if strings.HasPrefix(r.Path, "/api/v1/media/:") {
			paths = append(paths, media.EscapedPath())
			continue
		}
		segs := strings.Split(r.Path, "/")
		for i, s := range segs {
			if strings.HasPrefix(s, ":") || strings.HasPrefix(s, "*") {
				v, ok := params[s[1:]]
				if !ok {
					v = "x"
				}
				segs[i] = v
			}
		}
		paths = append(paths, strings.Join(segs, "/"))
	}
	if len(paths) < 40 {
		t.Fatalf("only %d GET routes mounted: %v", len(paths), paths)
	}
	var ok200 int
	for _, p := range paths {
		get, getBody := headTestDo(t, http.MethodGet, base+p)
		head, headBody := headTestDo(t, http.MethodHead, base+p)
		if get.StatusCode == http.StatusTooManyRequests || head.StatusCode == http.StatusTooManyRequests {
			t.Errorf("%s: rate limited (%d, %d)", p, get.StatusCode, head.StatusCode)
			continue
		}
		if head.StatusCode != get.StatusCode {
			t.Errorf("HEAD %s = %d, GET = %d", p, head.StatusCode, get.StatusCode)
			continue
		}
		if get.StatusCode == http.StatusOK {
			ok200++
		}
		if len(headBody) != 0 {
			t.Errorf("HEAD %s carried %d body bytes", p, len(headBody))
		}
		for name := range get.Header {
			switch name {
			case "Date", "Content-Length", "Transfer-Encoding":
				continue
			}
			if g, h := get.Header.Values(name), head.Header.Values(name); strings.Join(g, "\n") != strings.Join(h, "\n") {
				t.Errorf("%s: header %s is %q on GET, %q on HEAD", p, name, g, h)
			}
		}
		if cl := get.Header.Get("Content-Length"); cl != "" && head.Header.Get("Content-Length") != cl {
			t.Errorf("%s: Content-Length %s on GET, %q on HEAD", p, cl, head.Header.Get("Content-Length"))
		}
		if get.ContentLength < 0 && head.ContentLength != int64(len(getBody)) && p != "/api/v1/health" && p != "/metrics" {
			t.Errorf("%s: HEAD Content-Length %d, GET sent %d bytes", p, head.ContentLength, len(getBody))
		}
	}
	if ok200 < 20 {
		t.Errorf("only %d of %d GET routes answered 200: the table tests too little", ok200, len(paths))
	}
	// A route with a HEAD of its own keeps it: /mcp answers 405 to HEAD as to GET.
	if resp, _ := headTestDo(t, http.MethodHead, base+"/mcp"); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("HEAD /mcp = %d, want 405", resp.StatusCode)
	}
}

// headTestDo sends one request without credentials and reads the whole answer.
func headTestDo(t *testing.T, method, u string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	return resp, body
}

// TestSitemapListsPages: every URL of a node's sitemap, with every surface mounted, answers 200
// to a plain GET.
func TestSitemapListsPages(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	base := "http://" + n.HTTPAddr()
	resp, body := headTestDo(t, http.MethodGet, base+"/sitemap.xml")
	var set struct {
		URLs []struct {
			Loc string `xml:"loc"`
		} `xml:"url"`
	}
	if resp.StatusCode != http.StatusOK || xml.Unmarshal(body, &set) != nil || len(set.URLs) < 10 {
		t.Fatalf("sitemap: %d %s", resp.StatusCode, body)
	}
	for _, u := range set.URLs {
		if resp, _ := headTestDo(t, http.MethodGet, u.Loc); resp.StatusCode != http.StatusOK {
			t.Errorf("the sitemap lists %s, which answers %d", u.Loc, resp.StatusCode)
		}
	}
}
