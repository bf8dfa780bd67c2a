package canonical

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// vectorCanonicals returns every `canonical` and `tamperedCanonical` string in
// the freeq signing vector files.
func vectorCanonicals(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, file := range []string{"chat-signing-vectors.json", "act-signing-vectors.json"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "vectors", file))
		if err != nil {
			t.Fatalf("read vectors: %v", err)
		}
		var doc struct {
			Vectors []struct {
				Name      string `json:"name"`
				Canonical string `json:"canonical"`
			} `json:"vectors"`
			Negatives []struct {
				Name              string `json:"name"`
				TamperedCanonical string `json:"tamperedCanonical"`
			} `json:"negatives"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("decode %s: %v", file, err)
		}
		for _, v := range doc.Vectors {
			out[file+"/"+v.Name] = v.Canonical
		}
		for _, n := range doc.Negatives {
			if n.TamperedCanonical != "" {
				out[file+"/negative/"+n.Name] = n.TamperedCanonical
			}
		}
	}
	if len(out) < 21 {
		t.Fatalf("found only %d canonical strings in the vector files", len(out))
	}
	return out
}

// TestVectorCanonicalsAreFixedPoints checks both encoders against every
// canonical document in the freeq vectors: Transform leaves each unchanged,
// Transform recovers it from encoding/json's differently escaped, indented
// form, and Marshal reproduces it from the decoded value.
func TestVectorCanonicalsAreFixedPoints(t *testing.T) {
	for name, canon := range vectorCanonicals(t) {
		t.Run(name, func(t *testing.T) {
			got, err := Transform([]byte(canon))
			if err != nil {
				t.Fatalf("Transform: %v", err)
			}
			if string(got) != canon {
				t.Fatalf("Transform changed the canonical:\n got %s\nwant %s", got, canon)
			}
			var value map[string]any
			if err := json.Unmarshal([]byte(canon), &value); err != nil {
				t.Fatalf("decode canonical: %v", err)
			}
			indented, err := json.MarshalIndent(value, "", "  ")
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			got, err = Transform(indented)
			if err != nil {
				t.Fatalf("Transform(indented): %v", err)
			}
			if string(got) != canon {
				t.Fatalf("Transform(indented):\n got %s\nwant %s", got, canon)
			}
			got, err = Marshal(value)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if string(got) != canon {
				t.Fatalf("Marshal:\n got %s\nwant %s", got, canon)
			}
		})
	}
}
