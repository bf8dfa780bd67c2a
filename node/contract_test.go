package node

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestEveryMountedRouteIsDocumented: the contract document a node serves describes every route it
// mounts, including those other packages add (signing routes); the node-to-node exchange is not
// on the public server (it is served on the cluster listener only), so it is neither mounted nor
// documented there.
func TestEveryMountedRouteIsDocumented(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	missing, err := n.rest.UndocumentedRoutes()
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Fatalf("routes mounted but not in the contract document: %v", missing)
	}
	resp, body := httpDo(t, "GET", "http://"+n.HTTPAddr()+"/api/v1/openapi.json", "", nil)
	var doc struct {
		OpenAPI string `json:"openapi"`
		Info    struct {
			Version string `json:"version"`
		} `json:"info"`
		Paths map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || resp.StatusCode != 200 || doc.OpenAPI != "3.1.0" || doc.Info.Version != "0.1.0" {
		t.Fatalf("contract document: %d %v %+v", resp.StatusCode, err, doc)
	}
	for _, p := range []string{"/api/v1/verify/{msgid}", "/api/v1/signing-keys/{did}/{kid}", "/irc"} {
		if _, ok := doc.Paths[p]; !ok {
			t.Errorf("the served document lacks %s", p)
		}
	}
	if _, ok := doc.Paths["/internal/v1/events"]; ok {
		t.Error("the public document describes the cluster-only exchange routes")
	}
	for _, method := range []string{"GET", "POST"} {
		if resp, _ := httpDo(t, method, "http://"+n.HTTPAddr()+"/internal/v1/events", "", nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s /internal/v1/events on the public port = %d, want 404", method, resp.StatusCode)
		}
	}
}
