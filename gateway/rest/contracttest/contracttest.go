package contracttest

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
)

// Contract validates responses against one document.
type Contract struct {
	mu sync.Mutex
	v  validator.Validator
}

// Fetch loads the contract document a server serves at
// baseURL/api/v1/openapi.json and checks that it is valid OpenAPI.
func Fetch(t testing.TB, baseURL string) *Contract {
	t.Helper()
	resp, err := http.Get(baseURL + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("contract document: %d %v", resp.StatusCode, err)
	}
	doc, err := libopenapi.NewDocument(body)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("building the validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		t.Fatalf("the contract document is not valid OpenAPI: %v", verrs)
	}
	return &Contract{v: v}
}

// Check fails the test unless the response (whose body the caller read)
// matches the document's description of method and url.
func (c *Contract) Check(t testing.TB, method, url string, resp *http.Response, body []byte) {
	t.Helper()
	req := httptest.NewRequest(method, url, nil)
	copied := *resp
	copied.Body = io.NopCloser(bytes.NewReader(body))
	c.mu.Lock()
	ok, errs := c.v.ValidateHttpResponse(req, &copied)
	c.mu.Unlock()
	if !ok {
		for _, e := range errs {
			t.Errorf("%s %s → %d does not match the contract: %s", method, url, resp.StatusCode, e.Error())
		}
	}
}
