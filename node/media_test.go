package node

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestMediaOnOneNode(t *testing.T) {
	checkMedia(t, []*Node{startNode(t, t.TempDir(), nil)})
}

func TestMediaOnThreeNodes(t *testing.T) {
	// One copy of each upload, so that stopping its holder leaves none (checkHolderDown).
	nodes := startNamedCluster(t, "test", func(c *Config) { c.Media.Replicas = 1 })
	checkMedia(t, nodes)
	checkHolderDown(t, nodes)
}

// mediaUpload is the part of the upload answer the node tests read.
type mediaUpload struct {
	URL     string            `json:"url"`
	ID      string            `json:"id"`
	Private bool              `json:"private"`
	Tags    map[string]string `json:"tags"`
}

// uploadTo posts content as a multipart upload to n.
func uploadTo(t *testing.T, n *Node, token string, content []byte, fields map[string]string) (int, mediaUpload) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	w, _ := mw.CreateFormFile("file", "clip.bin")
	w.Write(content)
	mw.Close()
	req, _ := http.NewRequestWithContext(testCtx(t), "POST", "http://"+n.HTTPAddr()+"/api/v1/upload", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out mediaUpload
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// mediaGet fetches a path of n with an optional Range.
func mediaGet(t *testing.T, n *Node, path, rng string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequestWithContext(testCtx(t), "GET", "http://"+n.HTTPAddr()+path, nil)
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	return resp, buf.Bytes()
}

// checkMedia: a private upload made on the first node downloads byte-identical, and by range,
// from every node; tampered capabilities are 403 everywhere; pre-key bundles and group keys
// written on the first node are read on the last.
func checkMedia(t *testing.T, nodes []*Node) {
	first, last := nodes[0], nodes[len(nodes)-1]
	alice, aliceRes := login(t, first, "mediaalice")
	bob, bobRes := login(t, last, "mediabob")
	alice.Send("JOIN #media")
	expect(t, alice, "366", "#media")
	bob.Send("JOIN #media")
	expect(t, bob, "366", "#media")

	content := make([]byte, 200<<10+17)
	rand.Read(content)
	status, up := uploadTo(t, first, aliceRes.Token, content, map[string]string{"private": "1"})
	if status != http.StatusOK || !up.Private || up.Tags["media-size"] != "204817" {
		t.Fatalf("upload on %s: %d %+v", first.cfg.NodeName, status, up)
	}
	u, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(strings.TrimPrefix(u.Path, "/api/v1/media/"), "/")
	if len(parts) != 3 {
		t.Fatalf("capability URL %s", up.URL)
	}
	id, sig := parts[0], parts[1]
	for _, n := range nodes {
		resp, body := mediaGet(t, n, u.Path, "")
		if resp.StatusCode != http.StatusOK || !bytes.Equal(body, content) {
			t.Fatalf("download on %s: %d, %d bytes", n.cfg.NodeName, resp.StatusCode, len(body))
		}
		resp, body = mediaGet(t, n, u.Path, "bytes=65530-131080")
		if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(body, content[65530:131081]) ||
			resp.Header.Get("Content-Range") != "bytes 65530-131080/204817" {
			t.Fatalf("range on %s: %d %q, %d bytes", n.cfg.NodeName, resp.StatusCode, resp.Header.Get("Content-Range"), len(body))
		}
		flipped := sig[:len(sig)-1] + map[bool]string{true: "A", false: "B"}[sig[len(sig)-1] != 'A']
		for _, bad := range []string{
			"/api/v1/media/" + id + "/" + flipped + "/clip.bin",
			"/api/v1/media/" + id[:len(id)-1] + map[bool]string{true: "A", false: "B"}[id[len(id)-1] != 'A'] + "/" + sig + "/clip.bin",
			"/api/v1/media/" + id + "/clip.bin",
		} {
			if resp, _ := mediaGet(t, n, bad, ""); resp.StatusCode != http.StatusForbidden {
				t.Fatalf("tampered %s on %s: %d", bad, n.cfg.NodeName, resp.StatusCode)
			}
		}
	}

	// The proxies refuse what would reach the nodes themselves or the metadata service, whatever
	// the spelling; the refusals are counted.
	for _, n := range nodes {
		self := "http://" + n.HTTPAddr() + "/api/v1/health"
		for _, probe := range []string{
			"/api/v1/og?url=" + url.QueryEscape(self),
			"/api/v1/og?url=" + url.QueryEscape(strings.Replace(self, "127.0.0.1", "2130706433", 1)),
			"/api/v1/og?url=" + url.QueryEscape(strings.Replace(self, "127.0.0.1", "[::ffff:127.0.0.1]", 1)),
			"/api/v1/og?url=" + url.QueryEscape("http://169.254.169.254/latest/meta-data/"),
			"/api/v1/og?url=" + url.QueryEscape("file:///etc/passwd"),
			"/api/v1/blob?url=" + url.QueryEscape(self),
		} {
			if resp, _ := mediaGet(t, n, probe, ""); resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("%s on %s: %d", probe, n.cfg.NodeName, resp.StatusCode)
			}
		}
		if _, body := mediaGet(t, n, "/metrics", ""); !strings.Contains(string(body), `palaver_media_proxy_refusals_total{proxy="og"} 5`) {
			t.Fatalf("refusals not counted on %s", n.cfg.NodeName)
		}
	}
	if _, body := mediaGet(t, first, "/metrics", ""); !strings.Contains(string(body), `palaver_media_uploads_total{result="stored"} 1`) ||
		!strings.Contains(string(body), "palaver_media_upload_bytes_total 204817") {
		t.Fatal("upload not counted on " + first.cfg.NodeName)
	}

	// Pre-key bundles and group keys written on the first node are read on the last.
	resp, _ := httpDo(t, "POST", "http://"+first.HTTPAddr()+"/api/v1/keys", aliceRes.Token,
		strings.NewReader(`{"did":"`+aliceRes.DID+`","bundle":{"identity_key":"idk"}}`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("bundle: %d", resp.StatusCode)
	}
	if resp, _ := httpDo(t, "POST", "http://"+last.HTTPAddr()+"/api/v1/keys", bobRes.Token,
		strings.NewReader(`{"did":"`+aliceRes.DID+`","bundle":{"identity_key":"forged"}}`)); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("another DID's bundle: %d", resp.StatusCode)
	}
	eventually(t, "the bundle on "+last.cfg.NodeName, func() bool {
		resp, body := httpDo(t, "GET", "http://"+last.HTTPAddr()+"/api/v1/keys/"+aliceRes.DID, "", nil)
		return resp.StatusCode == http.StatusOK && strings.Contains(string(body), `"identity_key":"idk"`)
	})
	resp, body := httpDo(t, "POST", "http://"+first.HTTPAddr()+"/api/v1/channels/media/groupkeys", aliceRes.Token,
		strings.NewReader(`{"epoch":1,"keys":{"`+bobRes.DID+`":"EGK1:for-bob","`+aliceRes.DID+`":"EGK1:for-alice"}}`))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("group keys: %d %s", resp.StatusCode, body)
	}
	expect(t, bob, "MODE", "#media", "+E")
	eventually(t, "bob's group key on "+last.cfg.NodeName, func() bool {
		resp, body := httpDo(t, "GET", "http://"+last.HTTPAddr()+"/api/v1/channels/media/groupkeys", bobRes.Token, nil)
		return resp.StatusCode == http.StatusOK && strings.Contains(string(body), "EGK1:for-bob") && !strings.Contains(string(body), "for-alice")
	})
	if resp, _ := httpDo(t, "POST", "http://"+last.HTTPAddr()+"/api/v1/channels/media/groupkeys", bobRes.Token,
		strings.NewReader(`{"epoch":2,"keys":{"`+bobRes.DID+`":"EGK1:x"}}`)); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("group keys by a member: %d", resp.StatusCode)
	}
}

// checkHolderDown: with the node that holds an upload stopped, the others answer 503 with
// Retry-After, never a wrong or partial body.
func checkHolderDown(t *testing.T, nodes []*Node) {
	first, last := nodes[0], nodes[len(nodes)-1]
	_, res := login(t, first, "mediaholder")
	status, up := uploadTo(t, first, res.Token, []byte("held on the first node"), nil)
	if status != http.StatusOK || up.Private {
		t.Fatalf("public upload: %d %+v", status, up)
	}
	u, _ := url.Parse(up.URL)
	eventually(t, "the upload served by "+last.cfg.NodeName, func() bool {
		resp, body := mediaGet(t, last, u.Path, "")
		return resp.StatusCode == http.StatusOK && string(body) == "held on the first node"
	})
	first.Close()
	resp, body := mediaGet(t, last, u.Path, "")
	var e struct {
		Status int `json:"status"`
	}
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		json.Unmarshal(body, &e) != nil || e.Status != http.StatusServiceUnavailable {
		t.Fatalf("holder down: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}
