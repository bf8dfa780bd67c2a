package rest

import (
	"bufio"
	"bytes"
	"net/http"
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

// checkRewritten checks that out is in with the security headers added, and still one response.
func checkRewritten(t *testing.T, in, out []byte) {
	t.Helper()
	if !bytes.Equal(bytes.Replace(out, []byte(securityHeaderLines), nil, 1), in) {
		t.Fatalf("rewrite changed more than the headers:\n%q\n%q", in, out)
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(out)), nil)
	if err != nil {
		t.Fatalf("rewritten answer does not parse: %v\n%q", err, out)
	}
	defer resp.Body.Close()
	if resp.Header.Get("X-Frame-Options") != "DENY" || resp.Header.Get("Content-Security-Policy") == "" ||
		!resp.Close {
		t.Fatalf("rewritten headers %v", resp.Header)
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
		if !bytes.Equal(bytes.Replace(out, []byte(securityHeaderLines), nil, 1), in) {
			t.Fatalf("rewrite changed more than the headers:\n%q\n%q", in, out)
		}
	})
}
