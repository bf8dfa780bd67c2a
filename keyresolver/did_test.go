package keyresolver

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateDID(t *testing.T) {
	tests := []struct {
		did, method string
		ok          bool
	}{
		{"did:plc:ewvi7nxzyoun6zhxrhs64oiz", "plc", true},
		{"did:web:example.com", "web", true},
		{"did:web:example.com%3A8443:user:alice", "web", true},
		{"did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK", "key", true},
		{"did:example:a::b", "example", true},
		{"did:m1:X.y-z_", "m1", true},
		{"", "", false},
		{"did:", "", false},
		{"did:web", "", false},
		{"did:web:", "", false},
		{"did:web:example.com:", "", false},
		{"did::abc", "", false},
		{"did:WEB:example.com", "", false},
		{"did:we-b:example.com", "", false},
		{"DID:web:example.com", "", false},
		{"did:web:exa mple.com", "", false},
		{"did:web:example.com/path", "", false},
		{"did:web:example.com#frag", "", false},
		{"did:web:example.com%", "", false},
		{"did:web:example.com%3", "", false},
		{"did:web:example.com%zz", "", false},
		{"did:web:" + strings.Repeat("a", MaxDIDLength), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.did, func(t *testing.T) {
			method, err := ValidateDID(tt.did)
			if tt.ok {
				if err != nil || method != tt.method {
					t.Fatalf("ValidateDID(%q) = %q, %v; want %q, nil", tt.did, method, err, tt.method)
				}
				return
			}
			if !errors.Is(err, ErrInvalidDID) {
				t.Fatalf("ValidateDID(%q) = %q, %v; want ErrInvalidDID", tt.did, method, err)
			}
		})
	}
}

func TestValidatePLC(t *testing.T) {
	tests := []struct {
		did string
		ok  bool
	}{
		{"did:plc:ewvi7nxzyoun6zhxrhs64oiz", true},
		{"did:plc:ewvi7nxzyoun6zhxrhs64oi", false},
		{"did:plc:ewvi7nxzyoun6zhxrhs64oiz1", false},
		{"did:plc:EWVI7NXZYOUN6ZHXRHS64OIZ", false},
		{"did:plc:ewvi7nxzyoun6zhxrhs64oi1", false},
		{"did:plc:ewvi7nxzyoun6zhxrhs%2Fiz", false},
		{"did:web:ewvi7nxzyoun6zhxrhs64oiz", false},
	}
	for _, tt := range tests {
		if err := validatePLC(tt.did); (err == nil) != tt.ok {
			t.Errorf("validatePLC(%q) = %v, want ok=%v", tt.did, err, tt.ok)
		}
	}
}

func TestWebDocumentURL(t *testing.T) {
	tests := []struct {
		did, want string
	}{
		{"did:web:example.com", "https://example.com/.well-known/did.json"},
		{"did:web:example.com:user:alice", "https://example.com/user/alice/did.json"},
		{"did:web:example.com%3A8443", "https://example.com:8443/.well-known/did.json"},
		{"did:web:127.0.0.1%3a8443:a", "https://127.0.0.1:8443/a/did.json"},
		{"did:web:sub.Example.COM", "https://sub.Example.COM/.well-known/did.json"},
		{"did:web:example.com:a%20b", "https://example.com/a%20b/did.json"},
		{"did:web:example.com::a", ""},
		{"did:web:example.com:..", ""},
		{"did:web:example.com:.:a", ""},
		{"did:web:example.com%2Fevil", ""},
		{"did:web:user%40example.com", ""},
		{"did:web:example.com%3A", ""},
		{"did:web:example.com%3A0", ""},
		{"did:web:example.com%3A99999", ""},
		{"did:web:example.com%3A80%3A80", ""},
		{"did:web:.example.com", ""},
		{"did:web:example..com", ""},
		{"did:web:%5B%3A%3A1%5D", ""},
		{"did:plc:ewvi7nxzyoun6zhxrhs64oiz", ""},
		{"not a did", ""},
	}
	for _, tt := range tests {
		t.Run(tt.did, func(t *testing.T) {
			got, err := WebDocumentURL(tt.did)
			if tt.want == "" {
				if !errors.Is(err, ErrInvalidDID) {
					t.Fatalf("WebDocumentURL(%q) = %q, %v; want ErrInvalidDID", tt.did, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("WebDocumentURL(%q) = %q, %v; want %q", tt.did, got, err, tt.want)
			}
		})
	}
}

func FuzzValidateDID(f *testing.F) {
	for _, seed := range []string{
		"did:plc:ewvi7nxzyoun6zhxrhs64oiz", "did:web:example.com%3A8443:a", "did:key:z6Mk", "did:a:%", "did::", "did:x:y:",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, did string) {
		method, err := ValidateDID(did)
		if err != nil {
			return
		}
		if !strings.HasPrefix(did, "did:"+method+":") || len(did) > MaxDIDLength {
			t.Fatalf("accepted %q with method %q", did, method)
		}
		if method == "web" {
			if u, err := WebDocumentURL(did); err == nil && !strings.HasPrefix(u, "https://") {
				t.Fatalf("WebDocumentURL(%q) = %q", did, u)
			}
		}
	})
}

func FuzzParseDIDKey(f *testing.F) {
	for _, seed := range []string{
		"did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
		"did:key:zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme",
		"did:key:z", "did:key:u6Mk", "did:web:example.com",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, did string) {
		key, err := ParseDIDKey(did)
		if err != nil {
			return
		}
		if key.ID != did+"#"+strings.TrimPrefix(did, "did:key:") {
			t.Fatalf("key id %q for %q", key.ID, did)
		}
		if _, err := DIDKeyDocument(did); err != nil {
			t.Fatalf("DIDKeyDocument(%q) failed after ParseDIDKey succeeded: %v", did, err)
		}
	})
}
