package rest

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNormalizeFavorites(t *testing.T) {
	many := make([]string, 250)
	for i := range many {
		many[i] = fmt.Sprintf("#C%03d", i)
	}
	want200 := make([]string, 200)
	for i := range want200 {
		want200[i] = fmt.Sprintf("#c%03d", i)
	}
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"empty", nil, []string{}},
		{"keeps channel prefixes only", []string{"#a", "&b", "a", "+c", "!d", ""}, []string{"#a", "&b"}},
		{"lowercases ascii only", []string{"#PaLaVeR", "#ÄB"}, []string{"#palaver", "#Äb"}},
		{"order preserved", []string{"#z", "#a", "#m"}, []string{"#z", "#a", "#m"}},
		{"duplicates after lowercasing dropped", []string{"#A", "#a", "#b", "#B"}, []string{"#a", "#b"}},
		{"64 characters kept", []string{"#" + strings.Repeat("é", 63)}, []string{"#" + strings.Repeat("é", 63)}},
		{"65 characters dropped", []string{"#" + strings.Repeat("x", 64), "#ok"}, []string{"#ok"}},
		{"invalid names dropped", []string{"#a b", "#a,b", "#a\x07", "#\xff", "#ok"}, []string{"#ok"}},
		{"first 200 kept", many, want200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := normalizeFavorites(tt.in); !slices.Equal(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func FuzzDecodeFavorites(f *testing.F) {
	f.Add([]byte(`{"favorites":["#a","&B",1,null,"x"]}`))
	f.Add([]byte(`{"favorites":[]}`))
	f.Add([]byte(`{"favorites":"#a"}`))
	f.Add([]byte(`{} []`))
	f.Add([]byte(`{"favorites":["#\u00e9\u0000"]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		raw, err := decodeFavorites(bytes.NewReader(body))
		if err != nil {
			return
		}
		got := normalizeFavorites(raw)
		if len(got) > maxFavorites {
			t.Fatalf("%d favorites kept", len(got))
		}
		seen := map[string]bool{}
		for _, name := range got {
			if !isChannelName(name) || utf8.RuneCountInString(name) > maxFavoriteRunes || asciiLower(name) != name || seen[name] {
				t.Fatalf("bad favorite %q in %q", name, got)
			}
			seen[name] = true
		}
		if again := normalizeFavorites(got); !slices.Equal(again, got) {
			t.Fatalf("not idempotent: %q then %q", got, again)
		}
	})
}
