package keyresolver

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// bigDocument is a did:web document with n verification methods, each
// referenced from authentication by a relative id, padded to about size
// bytes of JSON when size > 0.
func bigDocument(n int) *Document {
	d := &Document{ID: "did:web:example.com"}
	for i := range n {
		id := fmt.Sprintf("#k%d", i)
		d.VerificationMethod = append(d.VerificationMethod, VerificationMethod{ID: id, Type: "Multikey"})
		ref, _ := json.Marshal(id)
		d.Authentication = append(d.Authentication, ref)
	}
	return d
}

// TestCandidateKeysLinear: resolving references costs a bounded amount of
// work per entry, however many methods a document lists (a nested scan of
// methods per reference made a 64 KiB document cost seconds of CPU).
func TestCandidateKeysLinear(t *testing.T) {
	for _, n := range []int{10, 1000, 4000} {
		d := bigDocument(n)
		allocs := testing.AllocsPerRun(1, func() { d.CandidateKeys() })
		if limit := float64(20*n + 100); allocs > limit {
			t.Errorf("%d methods: CandidateKeys made %.0f allocations, want at most %.0f", n, allocs, limit)
		}
	}
}

func TestParseDocumentListCaps(t *testing.T) {
	methods := func(n int) string {
		var parts, refs []string
		for i := range n {
			parts = append(parts, fmt.Sprintf(`{"id":"#k%d","type":"Multikey","publicKeyMultibase":"z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"}`, i))
			refs = append(refs, fmt.Sprintf(`"#k%d"`, i))
		}
		return `{"id":"did:web:example.com","verificationMethod":[` + strings.Join(parts, ",") + `],"authentication":[` + strings.Join(refs, ",") + `]}`
	}
	tests := []struct {
		name    string
		doc     string
		wantErr error
	}{
		{"at the cap", methods(MaxVerificationMethods), nil},
		{"one method over", methods(MaxVerificationMethods + 1), ErrDocumentTooLarge},
		{"64 KiB of methods", methods(500), ErrDocumentTooLarge},
		{"too many inline authentication entries", `{"id":"did:web:example.com","authentication":[` + strings.Repeat(`{"id":"#a"},`, MaxVerificationMethods) + `{"id":"#b"}]}`, ErrDocumentTooLarge},
		{"too many services", `{"id":"did:web:example.com","service":[` + strings.Repeat(`{"id":"#s"},`, MaxVerificationMethods) + `{"id":"#t"}]}`, ErrDocumentTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "64 KiB of methods" && len(tt.doc) < 48<<10 {
				t.Fatalf("document is only %d bytes", len(tt.doc))
			}
			doc, err := ParseDocument([]byte(tt.doc))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ParseDocument error = %v, want %v", err, tt.wantErr)
			}
			if err == nil && len(doc.CandidateKeys()) != MaxVerificationMethods {
				t.Errorf("CandidateKeys = %d keys, want %d", len(doc.CandidateKeys()), MaxVerificationMethods)
			}
		})
	}
}

// BenchmarkCandidateKeys64KiB measures CandidateKeys on a document of about
// 64 KiB (the largest the resolver reads), built without ParseDocument's cap.
func BenchmarkCandidateKeys64KiB(b *testing.B) {
	d := bigDocument(1200)
	for b.Loop() {
		d.CandidateKeys()
	}
}
