package irc

import (
	"strings"
	"testing"
	"time"
)

// FuzzWHOXOptions: any WHO options parse without panicking; a token is at most three bytes and a
// WHOX answer has one field per field letter asked for.
func FuzzWHOXOptions(f *testing.F) {
	for _, s := range []string{"%tcuhnfar,123", "%n", "%", "o", "%,", "%tt,99999", "%zzz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, opt string) {
		fields, token, ok := parseWHOX(opt)
		if !ok {
			if strings.Contains(opt, "%") {
				t.Fatalf("%q has %% but is not WHOX", opt)
			}
			return
		}
		if len(token) > 3 {
			t.Fatalf("token %q", token)
		}
		want := 0
		for _, letter := range "tcuihsnfdlaor" {
			if strings.ContainsRune(fields, letter) {
				want++
			}
		}
		row := whoRow{nick: "n"}
		if got := row.whox(fields, token); len(got) != want {
			t.Fatalf("%q: %d fields, want %d", opt, len(got), want)
		}
	})
}

// FuzzTargetsBound: CHATHISTORY TARGETS bounds are * or a timestamp, never a msgid.
func FuzzTargetsBound(f *testing.F) {
	for _, s := range []string{"*", "timestamp=2026-01-02T03:04:05.678Z", "msgid=01ARZ3NDEKTSV4RRFFQ69G5FAV", "", "timestamp="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		at, ok := targetsBound(s)
		if ok && s != "*" && (!strings.HasPrefix(s, "timestamp=") || at.Equal(time.Time{})) {
			t.Fatalf("%q accepted as %v", s, at)
		}
	})
}
