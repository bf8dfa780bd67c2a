package canonical

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

func FuzzTransform(f *testing.F) {
	for _, seed := range []string{
		`{"b":1,"a":"x"}`,
		"{ \"s\" : \"\\u2028\\u003c\\n\" , \"n\" : [1.0, -0, 1e2, 0.1] }",
		`{"emoji":"👍","kind":"react"}`,
		`[[],{},null,true,false,"\ud83d\ude00"]`,
		`"\u0000"`,
		`{"a":{"b":{"c":[1,2,3]}}}`,
		`{"a":1,"a":2}`,
		`1e400`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		once, err := Transform(in)
		if err != nil {
			return
		}
		twice, err := Transform(once)
		if err != nil {
			t.Fatalf("Transform of its own output %q failed: %v", once, err)
		}
		if !bytes.Equal(once, twice) {
			t.Fatalf("Transform is not idempotent:\n once %q\ntwice %q", once, twice)
		}
		if !json.Valid(once) {
			t.Fatalf("Transform output %q is not valid JSON", once)
		}
		var before, after any
		if err := json.Unmarshal(in, &before); err != nil {
			t.Fatalf("input %q canonicalized but does not decode: %v", in, err)
		}
		if err := json.Unmarshal(once, &after); err != nil {
			t.Fatalf("output %q does not decode: %v", once, err)
		}
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("value changed:\n  in %q\n out %q", in, once)
		}
	})
}

// FuzzMarshalString checks the direct string and key writer against the
// library on arbitrary valid UTF-8.
func FuzzMarshalString(f *testing.F) {
	for _, seed := range []string{"", "a", "\u2028<&>", "\x00\x1f\x7f", "— ✓ 👍", `"\`, "\ufb33"} {
		f.Add(seed, "k")
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		if !utf8.ValidString(key) || !utf8.ValidString(value) {
			if _, err := Marshal(map[string]string{key: value}); err == nil {
				t.Fatal("Marshal accepted invalid UTF-8")
			}
			return
		}
		v := map[string]any{key: value, "~": []any{value}}
		direct, err := Marshal(v)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		viaStd, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("json.Marshal: %v", err)
		}
		transformed, err := Transform(viaStd)
		if err != nil {
			t.Fatalf("Transform: %v", err)
		}
		if !bytes.Equal(direct, transformed) {
			t.Fatalf("Marshal %q != Transform %q", direct, transformed)
		}
	})
}

func FuzzCompareUTF16(f *testing.F) {
	f.Add("\ufb33", "\U0001F600")
	f.Add("a", "ab")
	f.Add("\uffff", "\U00010000")
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			return
		}
		want := slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
		if got := sign(compareUTF16(a, b)); got != want {
			t.Fatalf("compareUTF16(%q, %q) sign %d, want %d", a, b, got, want)
		}
	})
}
