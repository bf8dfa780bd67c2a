package eventstore

import (
	"encoding/json"
	"maps"
	"testing"
)

func TestDecodeTags(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]string
		wantErr bool
	}{
		{"", nil, false},
		{`{}`, map[string]string{}, false},
		{` { "a" : "b" , "c":"" } `, map[string]string{"a": "b", "c": ""}, false},
		{`{"+freeq.at/sig":"abc","+reply":"01J"}`, map[string]string{"+freeq.at/sig": "abc", "+reply": "01J"}, false},
		{`{"a":"x\"y","b":"\u00e9\n"}`, map[string]string{"a": `x"y`, "b": "é\n"}, false}, // escapes: fallback
		{`{"a":"b","a":"c"}`, map[string]string{"a": "c"}, false},
		{`{"a":"héllo"}`, map[string]string{"a": "héllo"}, false},
		{`{"a":1}`, nil, true},
		{`{"a":"b",}`, nil, true},
		{`{"a":"b"`, nil, true},
		{`["a"]`, nil, true},
		{`{"a":"b"} x`, nil, true},
	}
	for _, tt := range tests {
		got, err := decodeTags(tt.in)
		if (err != nil) != tt.wantErr || !maps.Equal(got, tt.want) {
			t.Errorf("decodeTags(%q) = %v, %v; want %v (err %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestTagsRoundTrip(t *testing.T) {
	for _, tags := range []map[string]string{
		nil,
		{"+freeq.at/sig": "c2lnbmF0dXJl", "+reply": "01J0000000000000000000000A"},
		{"k": "quote \" backslash \\ newline \n tab \t nul \x00 html <&> é 🎉"},
		{"bad-utf8": "\xff\xfe"},
	} {
		enc, err := encodeTags(tags)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeTags(enc)
		if err != nil {
			t.Fatalf("decodeTags(%q): %v", enc, err)
		}
		want := tags
		if tags["bad-utf8"] != "" {
			want = map[string]string{"bad-utf8": "\ufffd\ufffd"} // encoding/json's replacement
		}
		if !maps.Equal(got, want) {
			t.Errorf("round trip of %v = %v", tags, got)
		}
	}
}

// FuzzDecodeTags: the fast parser never disagrees with encoding/json.
func FuzzDecodeTags(f *testing.F) {
	for _, seed := range []string{`{}`, `{"a":"b"}`, ` {"a" : "b", "c":"d"} `, `{"a":"\u00e9"}`, `{"a":1}`,
		`{"a":"b",}`, `{"a":"\xff"}`, `{"a":"b"}{}`, `{"a":"b","a":"c"}`, `{"":""}`, "{\"a\":\"\x01\"}"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fast, ok := parseFlatObject(s)
		var slow map[string]string
		slowErr := json.Unmarshal([]byte(s), &slow)
		if ok && (slowErr != nil || !maps.Equal(fast, slow)) {
			t.Fatalf("parseFlatObject(%q) = %v; encoding/json: %v, %v", s, fast, slow, slowErr)
		}
		got, err := decodeTags(s)
		if s != "" && ((err == nil) != (slowErr == nil) || (err == nil && !maps.Equal(got, slow))) {
			t.Fatalf("decodeTags(%q) = %v, %v; encoding/json: %v, %v", s, got, err, slow, slowErr)
		}
	})
}
