package canonical

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestMarshal(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"null", nil, `null`},
		{"true", true, `true`},
		{"false", false, `false`},
		{"empty object", map[string]any{}, `{}`},
		{"empty string map", map[string]string{}, `{}`},
		{"empty array", []any{}, `[]`},
		{"int", 42, `42`},
		{"negative int64", int64(-7), `-7`},
		{"max safe integer", int64(1<<53 - 1), `9007199254740991`},
		{"uint8", uint8(255), `255`},
		{"json number integer", json.Number("100"), `100`},
		{"json number exponent", json.Number("1e2"), `100`},
		{"json number fraction", json.Number("1.50"), `1.5`},
		{"json number negative zero", json.Number("-0"), `0`},
		{"json number large", json.Number("1e21"), `1e+21`},
		{"plain string", "ship it", `"ship it"`},
		{"quote and backslash", `a"b\c`, `"a\"b\\c"`},
		{"short escapes", "\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"other controls lowercase hex", "\x00\x01\x1f", `"\u0000\u0001\u001f"`},
		{"DEL is raw", "\x7f", "\"\x7f\""},
		{"html characters are raw", "<a&b>", `"<a&b>"`},
		{"line and paragraph separators are raw", "\u2028\u2029", "\"\u2028\u2029\""},
		{"non-ASCII is raw", "— ✓ 👍", `"— ✓ 👍"`},
		{"slash is raw", "a/b", `"a/b"`},
		{
			"keys sorted",
			map[string]string{"target": "#freeq", "body": "x", "msgid": "m", "from": "d"},
			`{"body":"x","from":"d","msgid":"m","target":"#freeq"}`,
		},
		{
			// RFC 8785 §3.2.3: members sort by UTF-16 code units, so the
			// surrogate pair of U+1F600 comes before U+FB33.
			"keys sorted by UTF-16 code units",
			map[string]any{"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh", "1": "One", "\U0001F600": "Emoji: Grinning Face", "\u0080": "Control", "\u00f6": "Latin Small Letter O With Diaeresis"},
			"{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\",\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}",
		},
		{"prefix sorts first", map[string]string{"ab": "2", "a": "1"}, `{"a":"1","ab":"2"}`},
		{
			"nested",
			map[string]any{"z": []any{1, "x", nil, map[string]string{"b": "1", "a": "2"}}, "a": map[string]any{"k": true}},
			`{"a":{"k":true},"z":[1,"x",null,{"a":"2","b":"1"}]}`,
		},
		{"string slice", []string{"b", "a"}, `["b","a"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Marshal(tt.in)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if string(got) != tt.want {
				t.Fatalf("Marshal = %s, want %s", got, tt.want)
			}
			again, err := Transform(got)
			if err != nil {
				t.Fatalf("Transform(Marshal): %v", err)
			}
			if string(again) != tt.want {
				t.Fatalf("Transform(Marshal) = %s, want %s", again, tt.want)
			}
		})
	}
}

func TestMarshalErrors(t *testing.T) {
	type point struct{ X int }
	tests := []struct {
		name string
		in   any
		want error
	}{
		{"float", 1.5, ErrUnsupported},
		{"struct", point{1}, ErrUnsupported},
		{"int map", map[string]int{"a": 1}, ErrUnsupported},
		{"nested unsupported", map[string]any{"a": []any{point{}}}, ErrUnsupported},
		{"integer too large", int64(1 << 53), nil},
		{"integer too small", int64(-(1 << 53)), nil},
		{"uint too large", uint64(1 << 60), nil},
		{"invalid UTF-8 value", "a\xffb", nil},
		{"invalid UTF-8 key", map[string]string{"\xff": "x"}, nil},
		{"not a number", json.Number("0x10"), nil},
		{"leading zero", json.Number("01"), nil},
		{"number out of range", json.Number("1e400"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Marshal(tt.in)
			if err == nil {
				t.Fatal("Marshal succeeded, want an error")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
		})
	}
}

func TestMarshalDepthLimit(t *testing.T) {
	var v any = "leaf"
	for range maxDepth + 1 {
		v = []any{v}
	}
	if _, err := Marshal(v); err == nil {
		t.Fatal("Marshal of an over-deep value succeeded")
	}
}

func TestTransform(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr bool
	}{
		{"whitespace and order", "{ \"b\" : 1 ,\n \"a\" : [ true , null ] }", `{"a":[true,null],"b":1}`, false},
		{"escapes undone", `{"s":"\u2028\u003c\/\u00e9"}`, "{\"s\":\"\u2028</\u00e9\"}", false},
		{"numbers", `[1.0, 1e2, -0, 0.1, 1E-7]`, `[1,100,0,0.1,1e-7]`, false},
		{"top-level string", ` "x" `, `"x"`, false},
		{"duplicate key", `{"a":1,"a":2}`, "", true},
		{"lone surrogate", `"\udc00"`, "", true},
		{"invalid UTF-8", "\"\xff\"", "", true},
		{"trailing garbage", `{} x`, "", true},
		{"empty", ``, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Transform([]byte(tt.in))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Transform = %s, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Transform: %v", err)
			}
			if string(got) != tt.want {
				t.Fatalf("Transform = %s, want %s", got, tt.want)
			}
		})
	}
	if _, err := Transform(nil); err == nil {
		t.Fatal("Transform(nil) succeeded")
	}
}

// TestMarshalMatchesTransform holds the direct writer to the library's
// output on the same values encoded by encoding/json (which escapes <, >, &,
// U+2028 and U+2029 and sorts keys bytewise; Transform must undo all that).
func TestMarshalMatchesTransform(t *testing.T) {
	values := []any{
		map[string]any{"b": "<&>", "a": "\u2028", "\ufb33": 1, "\U0001F600": []any{false, nil, "\x01"}},
		map[string]string{"emoji": "👍", "kind": "react", "note": "ok — \"on it\" ✓\n(eta 5m)"},
		[]any{json.Number("3.0"), json.Number("-12"), int64(1<<53 - 1)},
	}
	for i, v := range values {
		direct, err := Marshal(v)
		if err != nil {
			t.Fatalf("value %d: Marshal: %v", i, err)
		}
		viaStd, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("value %d: json.Marshal: %v", i, err)
		}
		transformed, err := Transform(viaStd)
		if err != nil {
			t.Fatalf("value %d: Transform: %v", i, err)
		}
		if string(direct) != string(transformed) {
			t.Fatalf("value %d:\nMarshal   %s\nTransform %s", i, direct, transformed)
		}
	}
}

func TestIsJSONNumber(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"0", true}, {"-0", true}, {"12", true}, {"1.5", true}, {"1e5", true}, {"1E+5", true}, {"-1.25e-3", true},
		{"", false}, {"-", false}, {"01", false}, {"1.", false}, {".5", false}, {"1e", false}, {"+1", false},
		{"0x1", false}, {"1_000", false}, {"NaN", false}, {"Infinity", false}, {"1 ", false},
	}
	for _, tt := range tests {
		if got := isJSONNumber(tt.in); got != tt.want {
			t.Errorf("isJSONNumber(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestCompareUTF16(t *testing.T) {
	tests := []struct {
		a, b string
		sign int
	}{
		{"a", "b", -1},
		{"a", "a", 0},
		{"a", "ab", -1},
		{"\ufb33", "\U0001F600", 1}, // bytewise the other way round
		{"\uffff", "\U00010000", 1},
		{"\U0001F600", "\U0001F601", -1},
		{"\u00e9", "\u00ea", -1},
		{strings.Repeat("x", 3), strings.Repeat("x", 2), 1},
	}
	for _, tt := range tests {
		got := compareUTF16(tt.a, tt.b)
		if sign(got) != tt.sign {
			t.Errorf("compareUTF16(%q, %q) = %d, want sign %d", tt.a, tt.b, got, tt.sign)
		}
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}
