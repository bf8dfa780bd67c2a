package rest

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"
	"github.com/goccy/go-yaml"
)

// The contract document is written by hand in openapi.yaml (embedded) and
// served as JSON and YAML. Packages that mount routes of their own on
// Engine() describe them in fragments (DescribeRoutes), merged into it. On
// first use the operations of routes this server did not mount (metrics,
// /irc, evidence, depending on the configuration) are dropped and servers
// is set to the configured base URL, so that the served document describes
// exactly the mounted routes.

//go:embed openapi.yaml
var contractYAML []byte

// contractDocument is the served document in both encodings, built on
// first use so that routes mounted on Engine() after New are included.
type contractDocument struct {
	baseURL   string
	mounted   func() []string
	fragments []map[string]any // written only before serving starts

	once sync.Once
	json []byte
	yaml []byte
	err  error
}

// httpMethods are the operation keys of an OpenAPI path item.
var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// mergedSections are the parts of a fragment merged into the document.
var mergedSections = []string{"schemas", "responses", "parameters", "headers", "securitySchemes"}

// newContractDocument checks the embedded document now (it is fixed at
// build time, so a failure is a build defect) and prunes it on first use.
func newContractDocument(baseURL string, mounted func() []string) *contractDocument {
	if _, err := parseYAMLDocument(contractYAML); err != nil {
		panic("rest: the embedded OpenAPI document is broken: " + err.Error())
	}
	return &contractDocument{baseURL: baseURL, mounted: mounted}
}

// DescribeRoutes adds an OpenAPI 3.1 fragment (YAML or JSON with "paths"
// and optionally "components") describing routes a package mounts on
// Engine(). Its operations must not already be described; its components
// may repeat existing ones only identically. Call it before the server
// handles requests.
func (s *Server) DescribeRoutes(fragment []byte) error {
	frag, err := parseYAMLDocument(fragment)
	if err != nil {
		return fmt.Errorf("rest: OpenAPI fragment: %w", err)
	}
	doc, err := s.openapi.merged()
	if err != nil {
		return err
	}
	if err := mergeFragment(doc, frag); err != nil {
		return fmt.Errorf("rest: OpenAPI fragment: %w", err)
	}
	s.openapi.fragments = append(s.openapi.fragments, frag)
	return nil
}

// UndocumentedRoutes lists mounted routes ("GET /api/v1/x/{id}") that the
// contract document does not describe, for tests of whoever mounts routes.
func (s *Server) UndocumentedRoutes() ([]string, error) {
	doc, err := s.openapi.merged()
	if err != nil {
		return nil, err
	}
	paths := doc["paths"].(map[string]any)
	var missing []string
	for _, r := range s.mountedRoutes() {
		method, path, _ := strings.Cut(r, " ")
		path = OpenAPIPath(path)
		item, _ := paths[path].(map[string]any)
		if _, ok := item[strings.ToLower(method)]; !ok {
			missing = append(missing, method+" "+path)
		}
	}
	sort.Strings(missing)
	return missing, nil
}

// merged is the embedded document with every fragment merged in.
func (d *contractDocument) merged() (map[string]any, error) {
	doc, err := parseYAMLDocument(contractYAML)
	if err != nil {
		return nil, err
	}
	for _, frag := range d.fragments {
		if err := mergeFragment(doc, frag); err != nil {
			return nil, err
		}
	}
	return doc, nil
}

// encoded returns the served document as JSON and YAML.
func (d *contractDocument) encoded() (jsonDoc, yamlDoc []byte, err error) {
	d.once.Do(func() {
		doc, err := d.merged()
		if err != nil {
			d.err = err
			return
		}
		d.json, d.yaml, d.err = encodeForServing(doc, d.mounted(), d.baseURL)
	})
	return d.json, d.yaml, d.err
}

// parseYAMLDocument decodes an OpenAPI document or fragment, which must
// have a paths object.
func parseYAMLDocument(src []byte) (map[string]any, error) {
	raw, err := yaml.YAMLToJSON(src)
	if err != nil {
		return nil, fmt.Errorf("converting YAML to JSON: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("decoding the document: %w", err)
	}
	if _, ok := doc["paths"].(map[string]any); !ok {
		return nil, errors.New("the document has no paths object")
	}
	return doc, nil
}

// mergeFragment adds a fragment's paths and components to doc.
func mergeFragment(doc, frag map[string]any) error {
	paths := doc["paths"].(map[string]any)
	for path, v := range frag["paths"].(map[string]any) {
		item, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("path item %s is not an object", path)
		}
		existing, _ := paths[path].(map[string]any)
		if existing == nil {
			existing = map[string]any{}
			paths[path] = existing
		}
		for key, op := range item {
			if _, dup := existing[key]; dup && !reflect.DeepEqual(existing[key], op) {
				return fmt.Errorf("%s %s is already described", strings.ToUpper(key), path)
			}
			existing[key] = op
		}
	}
	fragComponents, _ := frag["components"].(map[string]any)
	if len(fragComponents) == 0 {
		return nil
	}
	components, _ := doc["components"].(map[string]any)
	if components == nil {
		components = map[string]any{}
		doc["components"] = components
	}
	for _, section := range mergedSections {
		add, _ := fragComponents[section].(map[string]any)
		if len(add) == 0 {
			continue
		}
		have, _ := components[section].(map[string]any)
		if have == nil {
			have = map[string]any{}
			components[section] = have
		}
		for name, v := range add {
			if old, dup := have[name]; dup && !reflect.DeepEqual(old, v) {
				return fmt.Errorf("components.%s.%s is already defined differently", section, name)
			}
			have[name] = v
		}
	}
	return nil
}

// encodeForServing drops the operations of unmounted routes ("METHOD
// /gin/:path") from doc, sets servers, and encodes it.
func encodeForServing(doc map[string]any, mounted []string, baseURL string) (jsonDoc, yamlDoc []byte, err error) {
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
