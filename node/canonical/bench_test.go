package canonical

import (
	"strings"
	"testing"
)

// benchDocument is shaped like a message signing document: a handful of
// short fields, a 100-byte text and a nested tag map.
func benchDocument() map[string]any {
	return map[string]any{
		"v":      1,
		"type":   "message",
		"msgid":  "01HXZ3K9Q8W2ABCDEFGHJKMNPQ",
		"venue":  map[string]any{"kind": "channel", "name": "#bench", "server": "palaver.bench"},
		"sender": "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
		"time":   1714564800000,
		"text":   strings.Repeat("héllo wörld ", 8) + "ok",
		"tags":   map[string]string{"+draft/reply": "01HXZ3K9Q8W2ABCDEFGHJKMNPA", "+typing": "done"},
	}
}

func BenchmarkMarshal(b *testing.B) {
	doc := benchDocument()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Marshal(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTransform(b *testing.B) {
	raw, err := Marshal(benchDocument())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := Transform(raw); err != nil {
			b.Fatal(err)
		}
	}
}
