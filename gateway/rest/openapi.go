package rest

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"
	"github.com/goccy/go-yaml"
)

// The contract document is written by hand in openapi.yaml (embedded) and
// served as JSON and YAML. On first use the operations of routes this
// server did not mount (metrics, /irc, evidence, depending on the configuration)
// are dropped from it and servers is set to the configured base URL, so
// the served document describes exactly the mounted routes.

//go:embed openapi.yaml
var contractYAML []byte

// contractDocument is the served document in both encodings, built on
// first use so that routes mounted on Engine() after New are included.
type contractDocument struct {
	baseURL string
	mounted func() []string
	once    sync.Once
	json    []byte
	yaml    []byte
	err     error
}

// httpMethods are the operation keys of an OpenAPI path item.
var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// newContractDocument checks the embedded document now (it is fixed at
// build time, so a failure is a build defect) and prunes it on first use.
func newContractDocument(baseURL string, mounted func() []string) *contractDocument {
	if _, err := parseContractYAML(); err != nil {
		panic("rest: the embedded OpenAPI document is broken: " + err.Error())
	}
	return &contractDocument{baseURL: baseURL, mounted: mounted}
}

// encoded returns the document as JSON and YAML.
func (d *contractDocument) encoded() (jsonDoc, yamlDoc []byte, err error) {
	d.once.Do(func() {
		d.json, d.yaml, d.err = buildContractDocument(d.mounted(), d.baseURL)
	})
	return d.json, d.yaml, d.err
}

func parseContractYAML() (map[string]any, error) {
	raw, err := yaml.YAMLToJSON(contractYAML)
	if err != nil {
		return nil, fmt.Errorf("converting openapi.yaml to JSON: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("decoding the contract document: %w", err)
	}
	if _, ok := doc["paths"].(map[string]any); !ok {
		return nil, fmt.Errorf("the contract document has no paths object")
	}
	return doc, nil
}

// buildContractDocument prunes the embedded document to the mounted routes
// ("METHOD /gin/:path") and encodes it.
func buildContractDocument(mounted []string, baseURL string) (jsonDoc, yamlDoc []byte, err error) {
	doc, err := parseContractYAML()
	if err != nil {
		return nil, nil, err
	}
	paths := doc["paths"].(map[string]any)
	keep := make(map[string]bool, len(mounted))
	for _, r := range mounted {
		method, path, _ := strings.Cut(r, " ")
		keep[strings.ToLower(method)+" "+OpenAPIPath(path)] = true
	}
	for path, v := range paths {
		item, ok := v.(map[string]any)
		if !ok {
			return nil, nil, fmt.Errorf("path item %s is not an object", path)
		}
		operations := 0
		for _, m := range httpMethods {
			if _, ok := item[m]; !ok {
				continue
			}
			if keep[m+" "+path] {
				operations++
			} else {
				delete(item, m)
			}
		}
		if operations == 0 {
			delete(paths, path)
		}
	}
	if baseURL != "" {
		doc["servers"] = []any{map[string]any{"url": baseURL}}
	}
	if jsonDoc, err = json.Marshal(doc); err != nil {
		return nil, nil, fmt.Errorf("encoding the contract document: %w", err)
	}
	if yamlDoc, err = yaml.JSONToYAML(jsonDoc); err != nil {
		return nil, nil, fmt.Errorf("encoding the contract document as YAML: %w", err)
	}
	return jsonDoc, yamlDoc, nil
}

// OpenAPIPath turns a gin route path ("/channels/:name", "/files/*path")
// into an OpenAPI path template ("/channels/{name}", "/files/{path}").
func OpenAPIPath(ginPath string) string {
	segments := strings.Split(ginPath, "/")
	for i, seg := range segments {
		if len(seg) > 1 && (seg[0] == ':' || seg[0] == '*') {
			segments[i] = "{" + seg[1:] + "}"
		}
	}
	return strings.Join(segments, "/")
}

func (s *Server) openAPIJSON(c *gin.Context) {
	if doc, _, ok := s.contractDocument(c); ok {
		c.Data(http.StatusOK, "application/json", doc)
	}
}

func (s *Server) openAPIYAML(c *gin.Context) {
	if _, doc, ok := s.contractDocument(c); ok {
		c.Data(http.StatusOK, "application/yaml", doc)
	}
}

func (s *Server) contractDocument(c *gin.Context) (jsonDoc, yamlDoc []byte, ok bool) {
	jsonDoc, yamlDoc, err := s.openapi.encoded()
	if err != nil {
		s.logger.ErrorContext(c.Request.Context(), "building the contract document failed", "err", err)
		WriteError(c, http.StatusInternalServerError, "The contract document could not be built")
		return nil, nil, false
	}
	return jsonDoc, yamlDoc, true
}
