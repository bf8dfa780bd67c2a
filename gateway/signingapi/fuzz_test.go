package signingapi

import (
	"strings"
	"testing"
)

// FuzzParsePairs: the batch keys= parser never panics, and what it accepts respects the rules.
func FuzzParsePairs(f *testing.F) {
	for _, seed := range []string{"", ",", "did:key:a/k1", "did:key:a/k1, did:web:x/k2 ,did:key:a/k1", "noslash", "a/b/c", strings.Repeat("d/k,", 51)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		pairs, problem := parsePairs(raw)
		if problem != "" {
			if pairs != nil {
				t.Fatalf("an error with pairs: %q", raw)
			}
			return
		}
		if len(pairs) == 0 || len(pairs) > maxBatchPairs {
			t.Fatalf("%d pairs accepted from %q", len(pairs), raw)
		}
		seen := map[pair]bool{}
		for _, p := range pairs {
			if seen[p] {
				t.Fatalf("duplicate %v kept from %q", p, raw)
			}
			seen[p] = true
			if strings.ContainsAny(p.did, "/") {
				t.Fatalf("did %q holds the separator", p.did)
			}
		}
	})
}
