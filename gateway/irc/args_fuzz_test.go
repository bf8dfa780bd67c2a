package irc

// Fuzz targets for the argument parsers of IRC commands: MONITOR lists, METADATA keys, WHO
// options and message target lists.

import (
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/raft/fsm/meta"
)

// FuzzMonitorList: a MONITOR target list split and rejoined into 730/731/732 lines keeps every
// valid nick once, in order, and no line's list passes the budget unless one nick alone does.
func FuzzMonitorList(f *testing.F) {
	for _, s := range []string{"a,b,c", ",,", "nick", strings.Repeat("n,", 300), "a b,c\x00d,#chan,did:plc:x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		var nicks []string
		for _, p := range strings.Split(list, ",") {
			if p = strings.TrimSpace(p); p != "" && validNick(p) {
				nicks = append(nicks, p)
			}
		}
		chunks := commaChunks(nicks)
		if got := strings.Join(chunks, ","); got != strings.Join(nicks, ",") {
			t.Fatalf("chunks %q lose or reorder nicks %q", chunks, nicks)
		}
		for _, ch := range chunks {
			if len(ch) > monitorLineBudget && strings.Contains(ch, ",") {
				t.Fatalf("chunk of %d bytes holds several nicks", len(ch))
			}
		}
	})
}

// FuzzMetadataKeys: the keys of a METADATA SUB/GET line are split on spaces; a key accepted as
// valid is made only of the bytes the specification allows, and a line of keys is never empty.
func FuzzMetadataKeys(f *testing.F) {
	for _, s := range []string{"avatar display-name", "a:b", "", "  ", "UPPER lower", "x/y.z_w-1", "é"} {
		f.Add(s, "more keys")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		keys := splitKeys([]string{a, b})
		for _, k := range keys {
			if k == "" || strings.ContainsAny(k, " \t\r\n") {
				t.Fatalf("split key %q", k)
			}
			if !meta.ValidKey(k) {
				continue
			}
			if strings.Trim(k, "abcdefghijklmnopqrstuvwxyz0123456789_.-/") != "" || len(k) > meta.MaxKeyLen {
				t.Fatalf("invalid key %q accepted", k)
			}
		}
		for _, chunk := range spaceChunks(keys) {
			if chunk == "" {
				t.Fatal("empty key line")
			}
		}
	})
}

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
