package rest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/goccy/go-yaml"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/palaver-chat/palaver/gateway/metrics"
	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/gateway/transport"
	"github.com/palaver-chat/palaver/node/eventstore"
)

// fullyConfigured mounts every optional route: metrics, /irc and evidence.
func fullyConfigured(c *rest.Config) {
	c.IRC = func(transport.Conn) {}
	c.Evidence = fakeEvidence{}
}

// fakeEvidence builds a bundle naming the messages it was given.
type fakeEvidence struct{}

func (fakeEvidence) BuildEvidence(_ context.Context, channel string, msgs []eventstore.Message) ([]byte, error) {
	ids := make([]map[string]string, 0, len(msgs))
	for _, m := range msgs {
		ids = append(ids, map[string]string{"msgid": m.MsgID, "text": m.Text})
	}
	return json.Marshal(map[string]any{"bundle_version": "2", "channel": channel, "messages": ids})
}

// contract validates responses against the served contract document.
type contract struct {
	mu  sync.Mutex
	v   validator.Validator
	doc map[string]any
}

var (
	contractOnce sync.Once
	theContract  *contract
	contractErr  error
)

// loadContract builds the validator from the document a fully configured
// server serves, once per test binary.
func loadContract(t testing.TB) *contract {
	t.Helper()
	contractOnce.Do(func() {
		srv := rest.New(rest.Config{ServerName: "contract.test", BaseURL: testBaseURL, Metrics: metrics.New(), IRC: func(transport.Conn) {}, Evidence: fakeEvidence{}})
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/openapi.json", nil))
		if rec.Code != http.StatusOK {
			contractErr = fmt.Errorf("GET /api/v1/openapi.json: %d %s", rec.Code, rec.Body.String())
			return
		}
		doc, err := libopenapi.NewDocument(rec.Body.Bytes())
		if err != nil {
			contractErr = err
			return
		}
		v, errs := validator.NewValidator(doc)
		if len(errs) > 0 {
			contractErr = fmt.Errorf("building the validator: %v", errs)
			return
		}
		if ok, verrs := v.ValidateDocument(); !ok {
			contractErr = fmt.Errorf("the contract document is not valid OpenAPI: %v", describe(verrs))
			return
		}
		c := &contract{v: v}
		if err := json.Unmarshal(rec.Body.Bytes(), &c.doc); err != nil {
			contractErr = err
			return
		}
		theContract = c
	})
	if contractErr != nil {
		t.Fatal(contractErr)
	}
	return theContract
}

// documents reports whether the document has an operation for the
// request's method and (template) path.
func (c *contract) documents(method, path string) bool {
	paths := c.doc["paths"].(map[string]any)
	for tmpl, item := range paths {
		if _, ok := item.(map[string]any)[strings.ToLower(method)]; ok && matchTemplate(tmpl, path) {
			return true
		}
	}
	return false
}

func matchTemplate(tmpl, path string) bool {
	ts, ps := strings.Split(tmpl, "/"), strings.Split(path, "/")
	if len(ts) != len(ps) {
		return false
	}
	for i := range ts {
		if strings.HasPrefix(ts[i], "{") || ts[i] == ps[i] {
			continue
		}
		return false
	}
	return true
}

// check validates one response (its body is given separately, since the
// caller has read it). Responses to undocumented operations (unknown
// paths, wrong methods) must be the Error object instead.
func (c *contract) check(t testing.TB, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	if req.Method == http.MethodOptions {
		// CORS preflights are answered by middleware on every path, not by routes.
		if resp.StatusCode != http.StatusNoContent || len(body) != 0 {
			t.Fatalf("preflight %s answered %d %q", req.URL.Path, resp.StatusCode, body)
		}
		return
	}
	if !c.documents(req.Method, req.URL.Path) {
		if resp.StatusCode < 400 {
			t.Fatalf("%s %s answered %d but is not in the contract document", req.Method, req.URL.Path, resp.StatusCode)
		}
		checkErrorObject(t, resp, body)
		return
	}
	copied := *resp
	copied.Body = io.NopCloser(bytes.NewReader(body))
	c.mu.Lock()
	ok, errs := c.v.ValidateHttpResponse(req, &copied)
	c.mu.Unlock()
	if !ok {
		t.Fatalf("%s %s → %d does not match the contract: %s\nbody: %.600s", req.Method, req.URL.String(), resp.StatusCode, describe(errs), body)
	}
	if resp.StatusCode >= 400 && strings.HasPrefix(req.URL.Path, "/api/") {
		checkErrorObject(t, resp, body)
	}
}

// checkErrorObject insists on exactly the four-field Error object.
func checkErrorObject(t testing.TB, resp *http.Response, body []byte) rest.ErrorObject {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("error %d with Content-Type %q: %s", resp.StatusCode, ct, body)
	}
	var e rest.ErrorObject
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	if e.Status != resp.StatusCode || e.Error != http.StatusText(resp.StatusCode) || e.Message == "" ||
		!strings.HasSuffix(e.Documentation, "/api/v1/openapi.json") {
		t.Fatalf("error object %+v for status %d", e, resp.StatusCode)
	}
	return e
}

func describe[E interface{ Error() string }](errs []E) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString("\n  - ")
		b.WriteString(e.Error())
	}
	return b.String()
}

// TestContractCoversEveryRoute walks the route table of a fully configured
// server: every mounted route must be in the embedded document, and every
// documented operation must be mounted.
func TestContractCoversEveryRoute(t *testing.T) {
	ts := newTestServer(t, fullyConfigured)
	var doc map[string]any
	embedded, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := yaml.YAMLToJSON(embedded)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for path, item := range doc["paths"].(map[string]any) {
		for method := range item.(map[string]any) {
			if method == "parameters" || method == "summary" || method == "description" {
				continue
			}
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	mounted := map[string]bool{}
	for _, r := range ts.Engine().Routes() {
		key := r.Method + " " + rest.OpenAPIPath(r.Path)
		mounted[key] = true
		if !documented[key] {
			t.Errorf("mounted route %s is missing from openapi.yaml", key)
		}
	}
	for key := range documented {
		if !mounted[key] {
			t.Errorf("openapi.yaml documents %s, which a fully configured server does not mount", key)
		}
	}
	if doc["openapi"] != "3.1.0" || doc["info"].(map[string]any)["version"] != "0.1.0" {
		t.Errorf("openapi %v, info.version %v", doc["openapi"], doc["info"].(map[string]any)["version"])
	}
}

// TestContractDocumentServed checks the three encodings and that the served
// document drops what this server did not mount.
func TestContractDocumentServed(t *testing.T) {
	ts := newTestServer(t, func(c *rest.Config) { c.Metrics = nil })
	jsonDoc := ts.do("GET", "/api/v1/openapi.json", "")
	rootDoc := ts.do("GET", "/openapi.json", "")
	yamlDoc := ts.do("GET", "/api/v1/openapi.yaml", "")
	if jsonDoc.Code != 200 || rootDoc.Code != 200 || yamlDoc.Code != 200 {
		t.Fatalf("status %d %d %d", jsonDoc.Code, rootDoc.Code, yamlDoc.Code)
	}
	if ct := jsonDoc.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("JSON Content-Type %q", ct)
	}
	if ct := yamlDoc.Header().Get("Content-Type"); ct != "application/yaml" {
		t.Errorf("YAML Content-Type %q", ct)
	}
	if !bytes.Equal(jsonDoc.Body.Bytes(), rootDoc.Body.Bytes()) {
		t.Error("/openapi.json and /api/v1/openapi.json differ")
	}
	fromYAML, err := yaml.YAMLToJSON(yamlDoc.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var a, b map[string]any
	if err := json.Unmarshal(jsonDoc.Body.Bytes(), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(fromYAML, &b); err != nil {
		t.Fatal(err)
	}
	aj, _ := json.Marshal(a)
	bj, _ := json.Marshal(b)
	if !bytes.Equal(aj, bj) {
		t.Error("the YAML and JSON documents differ")
	}
	paths := a["paths"].(map[string]any)
	for _, gone := range []string{"/metrics", "/irc", "/api/v1/channels/{name}/evidence"} {
		if _, ok := paths[gone]; ok {
			t.Errorf("%s is documented but not mounted", gone)
		}
	}
	if _, ok := paths["/api/v1/channels/{name}/history"]; !ok {
		t.Error("history is not documented")
	}
	servers := a["servers"].([]any)
	if len(servers) != 1 || servers[0].(map[string]any)["url"] != testBaseURL {
		t.Errorf("servers = %v", servers)
	}
	if a["openapi"] != "3.1.0" {
		t.Errorf("openapi = %v", a["openapi"])
	}
	loadContract(t) // the document is valid OpenAPI 3.1
}

// TestContractRejectsDrift makes sure the validator is not vacuous: a body
// that breaks the schema is caught.
func TestContractRejectsDrift(t *testing.T) {
	c := loadContract(t)
	req := httptest.NewRequest("GET", "/api/v1/channels", nil)
	for _, body := range []string{`[{"name":"#a","members":"two","topic":"","modes":"+nt"}]`, `{"not":"an array"}`} {
		resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}}
		copied := *resp
		copied.Body = io.NopCloser(strings.NewReader(body))
		c.mu.Lock()
		ok, _ := c.v.ValidateHttpResponse(req, &copied)
		c.mu.Unlock()
		if ok {
			t.Errorf("the validator accepted %s", body)
		}
	}
	if c.documents("GET", "/api/v1/nothing") {
		t.Error("an unknown path is documented")
	}
}

// TestDescribeRoutes: a package that mounts its own routes describes them
// in a fragment merged into the served document.
func TestDescribeRoutes(t *testing.T) {
	ts := newTestServer(t, nil)
	ts.Engine().GET("/api/v1/test/things/:id", func(c *gin.Context) { c.JSON(200, map[string]string{"id": c.Param("id")}) })
	missing, err := ts.UndocumentedRoutes()
	if err != nil || !slices.Equal(missing, []string{"GET /api/v1/test/things/{id}"}) {
		t.Fatalf("undocumented = %v, %v", missing, err)
	}
	fragment := `
paths:
  /api/v1/test/things/{id}:
    get:
      operationId: getThing
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses:
        '200':
          description: A thing.
          content:
            application/json:
              schema: {$ref: '#/components/schemas/Thing'}
        '404': {$ref: '#/components/responses/NotFound'}
components:
  schemas:
    Thing:
      type: object
      required: [id]
      properties:
        id: {type: string}
`
	if err := ts.DescribeRoutes([]byte(fragment)); err != nil {
		t.Fatal(err)
	}
	if missing, err := ts.UndocumentedRoutes(); err != nil || len(missing) != 0 {
		t.Fatalf("undocumented after describing = %v, %v", missing, err)
	}
	for name, bad := range map[string]string{
		"an operation already described":  "paths:\n  /api/v1/health:\n    get:\n      responses: {'200': {description: x}}\n",
		"a component defined differently": "paths: {}\ncomponents:\n  schemas:\n    Thing: {type: string}\n",
		"no paths":                        "components: {}\n",
		"not YAML":                        "paths: [\n",
	} {
		if err := ts.DescribeRoutes([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	rec := ts.do("GET", "/api/v1/openapi.json", "")
	var doc struct {
		Paths      map[string]any `json:"paths"`
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Paths["/api/v1/test/things/{id}"] == nil || doc.Components.Schemas["Thing"] == nil || doc.Components.Schemas["Message"] == nil {
		t.Fatal("the fragment is not in the served document")
	}
}
