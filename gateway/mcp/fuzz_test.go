package mcp

import (
	"encoding/json"
	"testing"
)

// FuzzParse: the JSON-RPC parser never panics; a body is either invalid
// JSON or a list of entries, and each entry is either a call with a
// method or an error answer that encodes as a JSON-RPC error.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`[{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"freeq_history","arguments":{"channel":"#x"}}},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
		`[]`, `[1,"x",null]`, `{"jsonrpc":"1.0","id":{},"method":3}`, `{"id":null}`, `{bad`, ` `, `"s"`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		entries, batch, err := parseBody(body)
		if err != nil {
			if json.Valid(body) {
				t.Fatalf("valid JSON refused: %q", body)
			}
			return
		}
		if !batch && len(entries) != 1 {
			t.Fatalf("a single body gave %d entries", len(entries))
		}
		for _, raw := range entries {
			c, bad := parseEntry(raw)
			if bad == nil {
				if c.method == "" || (c.id != nil && !validID(c.id)) {
					t.Fatalf("accepted %q as %+v", raw, c)
				}
				continue
			}
			out, err := json.Marshal(bad)
			if err != nil || bad.Error == nil || bad.Error.Code != codeInvalidRequest || !json.Valid(out) {
				t.Fatalf("error answer for %q: %s %v", raw, out, err)
			}
		}
	})
}
