package discovery

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Operation is one documented (and so mounted) route of the served
// contract document: the route table every index is derived from.
type Operation struct {
	Method      string // upper case
	Path        string // OpenAPI template, e.g. /api/v1/channels/{name}/history
	OperationID string
	Summary     string
	Auth        string // "none", "bearer" or "none or bearer"
	// RequiredQuery: the operation takes a required query parameter, so a plain GET of its
	// path is refused.
	RequiredQuery bool
}

// methodOrder is the order of an OpenAPI path item's operations.
var methodOrder = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// routeTable reads the operations of a contract document, sorted by path
// and then method. Operation ids must be unique.
func routeTable(contract []byte) ([]Operation, error) {
	var doc struct {
		Security   []map[string]any                      `json:"security"`
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Parameters map[string]parameter `json:"parameters"`
		} `json:"components"`
	}
	if err := json.Unmarshal(contract, &doc); err != nil {
		return nil, fmt.Errorf("decoding the contract document: %w", err)
	}
	var ops []Operation
	seen := map[string]string{}
	for path, item := range doc.Paths {
		var shared []parameter
		if raw, ok := item["parameters"]; ok {
			if err := json.Unmarshal(raw, &shared); err != nil {
				return nil, fmt.Errorf("decoding the parameters of %s: %w", path, err)
			}
		}
		for _, m := range methodOrder {
			raw, ok := item[m]
			if !ok {
				continue
			}
			var op struct {
				OperationID string           `json:"operationId"`
				Summary     string           `json:"summary"`
				Security    []map[string]any `json:"security"`
				Parameters  []parameter      `json:"parameters"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				return nil, fmt.Errorf("decoding %s %s: %w", strings.ToUpper(m), path, err)
			}
			key := strings.ToUpper(m) + " " + path
			if op.OperationID == "" {
				return nil, fmt.Errorf("%s has no operationId", key)
			}
			if other, dup := seen[op.OperationID]; dup {
				return nil, fmt.Errorf("operationId %s names both %s and %s", op.OperationID, other, key)
			}
			seen[op.OperationID] = key
			security := op.Security
			if security == nil {
				security = doc.Security
			}
			required := slices.ContainsFunc(append(slices.Clone(shared), op.Parameters...), func(p parameter) bool {
				if name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/"); ok {
					p = doc.Components.Parameters[name]
				}
				return p.In == "query" && p.Required
			})
			ops = append(ops, Operation{Method: strings.ToUpper(m), Path: path, OperationID: op.OperationID,
				Summary: strings.TrimSpace(op.Summary), Auth: authOf(security), RequiredQuery: required})
		}
	}
	slices.SortFunc(ops, func(a, b Operation) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return slices.Index(methodOrder, strings.ToLower(a.Method)) - slices.Index(methodOrder, strings.ToLower(b.Method))
	})
	return ops, nil
}

// parameter is an OpenAPI parameter object or a reference to one.
type parameter struct {
	Ref      string `json:"$ref"`
	In       string `json:"in"`
	Required bool   `json:"required"`
}

// authOf summarizes a security requirement list: an empty requirement
// means anonymous callers are admitted.
func authOf(security []map[string]any) string {
	anonymous, bearer := len(security) == 0, false
	for _, req := range security {
		if len(req) == 0 {
			anonymous = true
		}
		if _, ok := req["bearer"]; ok {
			bearer = true
		}
	}
	switch {
	case anonymous && bearer:
		return "none or bearer"
	case bearer:
		return "bearer"
	default:
		return "none"
	}
}

// table is the route table with lookups.
type table []Operation

func (t table) has(method, path string) bool {
	return slices.ContainsFunc(t, func(o Operation) bool { return o.Method == method && o.Path == path })
}

// withPrefix lists the operations whose path starts with prefix.
func (t table) withPrefix(prefix string) []Operation {
	var out []Operation
	for _, o := range t {
		if strings.HasPrefix(o.Path, prefix) {
			out = append(out, o)
		}
	}
	return out
}
