package rest_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/gateway/rest"
)

func TestSearch(t *testing.T) {
	f := newFixture(t, nil)
	at := func(s int) time.Time { return baseTime.Add(time.Duration(s) * time.Second) }
	f.post("#pub", "Alice", aliceDID, "the quick brown fox", at(0), nil)
	lazy := f.post("#pub", "bob", "", "the lazy dog sleeps", at(1), nil)
	typo := f.post("#pub", "Alice", aliceDID, "a quikc fox", at(2), nil)
	f.edit("#pub", "Alice", aliceDID, typo, "a quick fox, edited", at(3))
	gone := f.post("#pub", "Alice", aliceDID, "quick and deleted", at(4), nil)
	f.remove(gone)
	f.post("#pub", "Alice", aliceDID, `operators AND "quotes" NEAR( * -x`, at(5), nil)
	f.post("#secret", "Alice", aliceDID, "quick secret", at(6), nil)

	search := func(q string, extra ...string) string {
		t.Helper()
		target := "/api/v1/search?channel=pub&q=" + url.QueryEscape(q) + strings.Join(extra, "")
		var got []rest.Message
		f.getJSON(target, "", &got)
		return texts(got)
	}
	tests := []struct {
		q     string
		extra []string
		want  string
	}{
		{"quick", nil, "a quick fox, edited|the quick brown fox"}, // newest first; edited text; no deleted
		{"quikc", nil, ""}, // the superseded revision is not found
		{"QUICK fox", nil, "a quick fox, edited|the quick brown fox"},
		{"quick dog", nil, ""}, // terms are ANDed
		{"lazy", nil, "the lazy dog sleeps"},
		{"quick", []string{"&limit=1"}, "a quick fox, edited"},
		{"quick", []string{"&before=" + strconv.FormatInt(at(2).Unix(), 10)}, "the quick brown fox"}, // the edit keeps the original's time
		{"quick", []string{"&before=" + lazy}, ""},                                                   // a msgid where seconds belong
		{"quick", []string{"&before=0"}, ""},
		{`"quotes"`, nil, `operators AND "quotes" NEAR( * -x`},
		{`NEAR(`, nil, `operators AND "quotes" NEAR( * -x`},
		{"AND", nil, `operators AND "quotes" NEAR( * -x`},
		{"* -", nil, ""}, // nothing searchable
		{"secret", nil, ""},
	}
	for _, tt := range tests {
		if got := search(tt.q, tt.extra...); got != tt.want {
			t.Errorf("search %q %v = %q, want %q", tt.q, tt.extra, got, tt.want)
		}
	}
	var got []rest.Message
	f.getJSON("/api/v1/search?channel=%23secret&q=quick", "alice-token", &got)
	if texts(got) != "quick secret" {
		t.Errorf("member search of #secret = %q", texts(got))
	}
	for target, want := range map[string]int{
		"/api/v1/search?q=quick":                                    http.StatusBadRequest,
		"/api/v1/search?channel=&q=quick":                           http.StatusBadRequest,
		"/api/v1/search?channel=pub":                                http.StatusBadRequest,
		"/api/v1/search?channel=pub&q=%20%20":                       http.StatusBadRequest,
		"/api/v1/search?channel=pub&q=" + strings.Repeat("a", 1025): http.StatusBadRequest,
		"/api/v1/search?channel=pub&q=x&limit=0":                    http.StatusBadRequest,
		"/api/v1/search?channel=pub&q=x&before=-5":                  http.StatusBadRequest,
		"/api/v1/search?channel=a%20b&q=x":                          http.StatusBadRequest,
		"/api/v1/search?channel=nope&q=x":                           http.StatusNotFound,
		"/api/v1/search?channel=secret&q=x":                         http.StatusForbidden,
		"/api/v1/search?channel=keyed&q=x":                          http.StatusForbidden,
		"/api/v1/search?channel=dm:did:key:a,did:key:b&q=x":         http.StatusForbidden,
	} {
		if code := f.status(target, ""); code != want {
			t.Errorf("GET %s = %d, want %d", target, code, want)
		}
	}
}

func TestExport(t *testing.T) {
	f := newFixture(t, nil)
	first := f.post("#pub", "Alice", aliceDID, "hello", baseTime, nil)
	second := f.post("#pub", "bob", "", "two\nlines\r\nthree", baseTime.Add(time.Second), nil)
	rev := f.edit("#pub", "Alice", aliceDID, first, "hello, edited", baseTime.Add(2*time.Second))
	gone := f.post("#pub", "bob", "", "deleted", baseTime.Add(3*time.Second), nil)
	f.remove(gone)

	var got []rest.Message
	f.getJSON("/api/v1/channels/pub/export", "", &got)
	if texts(got) != "hello, edited|two\nlines\r\nthree" || got[0].ReplacesMsgID != first || got[0].MsgID != rev {
		t.Fatalf("JSON export = %+v", got)
	}
	f.getJSON("/api/v1/channels/pub/export?format=json&limit=1", "", &got)
	if len(got) != 1 || got[0].MsgID != second {
		t.Fatalf("limit=1: %+v", got)
	}
	wantMD := "# #pub — exported transcript\n\n" +
		"- `2026-03-01 12:00:00 UTC` **Alice** (" + rev + "): hello, edited\n" +
		"- `2026-03-01 12:00:01 UTC` **bob** (" + second + "): two\n    lines\n    three\n"
	for _, format := range []string{"markdown", "md", "MarkDown"} {
		resp, body := f.get("/api/v1/channels/%23pub/export?format="+format, "")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/markdown; charset=utf-8" {
			t.Fatalf("format=%s: %d %q", format, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if string(body) != wantMD {
			t.Fatalf("format=%s:\n%s\nwant:\n%s", format, body, wantMD)
		}
	}
	for target, want := range map[string]int{
		"/api/v1/channels/pub/export?format=pdf": http.StatusBadRequest,
		"/api/v1/channels/pub/export?limit=-1":   http.StatusBadRequest,
		"/api/v1/channels/pub/export?limit=abc":  http.StatusBadRequest,
		"/api/v1/channels/nope/export":           http.StatusNotFound,
	} {
		if code := f.status(target, ""); code != want {
			t.Errorf("GET %s = %d, want %d", target, code, want)
		}
	}
	// Public channels only: a member's bearer does not open a restricted one.
	for _, token := range []string{"", "alice-token", "founder-token", "op-token"} {
		for _, ch := range []string{"secret", "keyed", "enc"} {
			if code := f.status("/api/v1/channels/"+ch+"/export", token); code != http.StatusForbidden {
				t.Errorf("export of %s with %q = %d, want 403", ch, token, code)
			}
		}
	}
}

// TestExportLimits checks the export caps: 1000 by default, 10000 at most.
func TestExportLimits(t *testing.T) {
	f := newFixture(t, nil)
	for i := range 1005 {
		f.post("#pub", "Alice", aliceDID, "m", baseTime.Add(time.Duration(i)*time.Second), nil)
	}
	var got []rest.Message
	f.getJSON("/api/v1/channels/pub/export", "", &got)
	if len(got) != 1000 || got[len(got)-1].Timestamp != baseTime.Unix()+1004 {
		t.Fatalf("default export: %d messages", len(got))
	}
	f.getJSON("/api/v1/channels/pub/export?limit=99999999", "", &got)
	if len(got) != 1005 {
		t.Fatalf("capped export: %d messages", len(got))
	}
	f.getJSON("/api/v1/channels/pub/history?limit=99999999", "", &got)
	if len(got) != 200 {
		t.Fatalf("capped history: %d messages", len(got))
	}
}
