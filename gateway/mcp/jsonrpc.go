package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
)

// JSON-RPC 2.0 error codes used here.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternalError  = -32603
	// codeRateLimited is in the range JSON-RPC leaves to servers.
	codeRateLimited = -32000
	// codeResourceNotFound is MCP's code for an unknown resource URI.
	codeResourceNotFound = -32002
)

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// response is a JSON-RPC response; exactly one of Result and Error is set.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// nullID is the id of answers to entries whose id could not be read.
var nullID = json.RawMessage("null")

func errorResponse(id json.RawMessage, code int, message string) *response {
	return &response{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: code, Message: message}}
}

// call is one well-formed entry of a body.
type call struct {
	// id is the raw id, so that strings and numbers round-trip exactly;
	// nil for a notification.
	id     json.RawMessage
	method string
	params json.RawMessage
}

func (c call) notification() bool { return c.id == nil }

var errNotJSON = errors.New("the body is not valid JSON")

// parseBody splits a body into its entries. batch is true for an array
// (even an empty one). Invalid JSON is errNotJSON.
func parseBody(body []byte) (entries []json.RawMessage, batch bool, err error) {
	if !json.Valid(body) {
		return nil, false, errNotJSON
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if trimmed[0] != '[' {
		return []json.RawMessage{trimmed}, false, nil
	}
	if err := json.Unmarshal(trimmed, &entries); err != nil {
		return nil, false, errNotJSON
	}
	return entries, true, nil
}

// parseEntry reads one entry. An entry that is not a valid request gives
// the error answer to send instead (with the entry's id when it is
// readable, else null).
func parseEntry(raw json.RawMessage) (call, *response) {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 || raw[0] != '{' {
		return call{}, errorResponse(nullID, codeInvalidRequest, "Invalid Request: a JSON-RPC request is a JSON object")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return call{}, errorResponse(nullID, codeInvalidRequest, "Invalid Request: "+err.Error())
	}
	c := call{params: fields["params"]}
	if id, present := fields["id"]; present {
		if !validID(id) {
			return call{}, errorResponse(nullID, codeInvalidRequest, "Invalid Request: id must be a string, a number or null")
		}
		c.id = id
	}
	answerID := c.id
	if answerID == nil {
		answerID = nullID
	}
	var version string
	if v, ok := fields["jsonrpc"]; !ok || json.Unmarshal(v, &version) != nil || version != "2.0" {
		return call{}, errorResponse(answerID, codeInvalidRequest, `Invalid Request: jsonrpc must be "2.0"`)
	}
	if m, ok := fields["method"]; !ok || json.Unmarshal(m, &c.method) != nil || c.method == "" {
		return call{}, errorResponse(answerID, codeInvalidRequest, "Invalid Request: method must be a non-empty string")
	}
	if p := bytes.TrimLeft(c.params, " \t\r\n"); len(p) > 0 && p[0] != '{' && p[0] != '[' && !bytes.Equal(p, []byte("null")) {
		return call{}, errorResponse(answerID, codeInvalidRequest, "Invalid Request: params must be an object or an array")
	}
	return c, nil
}

// validID reports whether a raw id is a string, a number or null.
func validID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return false
	}
	switch id[0] {
	case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}
