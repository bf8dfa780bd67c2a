package rest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

func TestWithSecurityHeadersRecognisesNetHTTPErrorsOnly(t *testing.T) {
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"400", "HTTP/1.1 400 Bad Request" + netHTTPErrorHeaders + "400 Bad Request", true},
		{"431", "HTTP/1.1 431 Request Header Fields Too Large" + netHTTPErrorHeaders + "431 Request Header Fields Too Large", true},
		{"400 with a reason", "HTTP/1.1 400 Bad Request: missing required Host header" + netHTTPErrorHeaders + "400 Bad Request: missing required Host header", true},
		{"a handler's answer", "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nDate: x\r\n\r\n{}", false},
		{"headers after another line", "HTTP/1.1 400 Bad Request\r\nX: y" + netHTTPErrorHeaders, false},
		{"body bytes", "hello" + netHTTPErrorHeaders, false},
		{"not an error", "HTTP/1.1 200 OK" + netHTTPErrorHeaders, false},
		{"too long", "HTTP/1.1 400 Bad Request" + netHTTPErrorHeaders + strings.Repeat("x", maxNetHTTPError), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, ok := withSecurityHeaders([]byte(tt.in))
			if ok != tt.ok {
				t.Fatalf("recognised %v, want %v", ok, tt.ok)
			}
			if ok {
				checkRewritten(t, []byte(tt.in), out)
			}
		})
	}
}

// checkRewritten checks that out is one response with in's status, the security headers and
// the Error object.
func checkRewritten(t *testing.T, in, out []byte) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(out)), nil)
	if err != nil {
		t.Fatalf("rewritten answer does not parse: %v\n%q", err, out)
	}
	defer resp.Body.Close()
	if resp.Header.Get("X-Frame-Options") != "DENY" || resp.Header.Get("Content-Security-Policy") == "" ||
		!resp.Close || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("rewritten headers %v", resp.Header)
	}
	if want := string(in[len("HTTP/1.1 ") : len("HTTP/1.1 ")+3]); strconv.Itoa(resp.StatusCode) != want {
		t.Fatalf("status %d, want %s", resp.StatusCode, want)
	}
	var e ErrorObject
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, &e); err != nil || e.Status != resp.StatusCode || e.Error != http.StatusText(e.Status) ||
		e.Message == "" || e.Documentation == "" {
		t.Fatalf("rewritten body %q (%v)", body, err)
	}
}

func FuzzWithSecurityHeaders(f *testing.F) {
	f.Add([]byte("HTTP/1.1 400 Bad Request" + netHTTPErrorHeaders + "400 Bad Request"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 " + netHTTPErrorHeaders))
	f.Fuzz(func(t *testing.T, in []byte) {
		out, ok := withSecurityHeaders(in)
		if !ok {
			return
		}
		checkRewritten(t, in, out)
	})
}
