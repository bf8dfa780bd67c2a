package rest

import (
	"net/url"
	"testing"
)

func TestNormalizeOrigin(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"https://Example.TEST", "https://example.test", true},
		{"https://example.test:443", "https://example.test", true},
		{"http://example.test:80/", "http://example.test", true},
		{"http://example.test:8080", "http://example.test:8080", true},
		{"http://[::1]:5173", "http://[::1]:5173", true},
		{"http://[::1]", "http://[::1]", true},
		{"https://example.test/path", "", false},
		{"https://user@example.test", "", false},
		{"ws://example.test", "", false},
		{"null", "", false},
		{"http://:", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := normalizeOrigin(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("normalizeOrigin(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzNormalizeOrigin(f *testing.F) {
	for _, seed := range []string{"https://example.test", "http://LOCALHOST:5173", "http://[::1]:80", "http://a@b", "https://x:443/"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, origin string) {
		norm, ok := normalizeOrigin(origin)
		if !ok {
			return
		}
		again, ok := normalizeOrigin(norm)
		if !ok || again != norm {
			t.Fatalf("%q normalized to %q, then to %q (%v)", origin, norm, again, ok)
		}
		u, err := url.Parse(norm)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			t.Fatalf("%q normalized to non-origin %q", origin, norm)
		}
	})
}
