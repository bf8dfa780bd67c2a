package rest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/node/eventstore"
)

// secondsPage builds messages oldest first, one per entry of secs (the
// Unix second of each), named by their index.
func secondsPage(secs ...int64) []eventstore.Message {
	out := make([]eventstore.Message, len(secs))
	for i, s := range secs {
		out[i] = eventstore.Message{MsgID: fmt.Sprint(i), Time: time.Unix(s, int64(i)*1000)}
	}
	return out
}

func ids(msgs []eventstore.Message) string {
	var b []string
	for _, m := range msgs {
		b = append(b, m.MsgID)
	}
	return strings.Join(b, ",")
}

func TestTrimOldestFirst(t *testing.T) {
	tests := []struct {
		name  string
		got   []eventstore.Message
		limit int
		want  string
	}{
		{"short page is the end", secondsPage(1, 1, 2), 5, "0,1,2"},
		{"exactly the page, nothing older", secondsPage(1, 1, 2), 3, "0,1,2"},
		{"next message in another second", secondsPage(1, 2, 2, 3), 3, "1,2,3"},
		{"next message shares the oldest second", secondsPage(2, 2, 2, 3), 3, "3"},
		{"one second fills the page", secondsPage(2, 2, 2, 2), 3, "1,2,3"},
		{"empty", nil, 3, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ids(trimOldestFirst(tt.got, tt.limit)); got != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestTrimNewestFirst(t *testing.T) {
	newestFirst := func(secs ...int64) []eventstore.Message {
		m := secondsPage(secs...)
		slices.Reverse(m)
		return m
	}
	tests := []struct {
		name  string
		got   []eventstore.Message
		limit int
		want  string
	}{
		{"short page", newestFirst(1, 2), 5, "1,0"},
		{"next in another second", newestFirst(1, 2, 2, 3), 3, "3,2,1"},
		{"next shares the oldest second", newestFirst(2, 2, 3, 3), 3, "3,2"},
		{"one second fills the page", newestFirst(3, 3, 3, 3), 3, "3,2,1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ids(trimNewestFirst(tt.got, tt.limit)); got != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// At the store's cap no extra message can be fetched, so a full page is
// trimmed conservatively.
func TestTrimAtStoreCap(t *testing.T) {
	limit := eventstore.MaxLimit
	if fetchSize(limit) != limit {
		t.Fatalf("fetchSize(%d) = %d", limit, fetchSize(limit))
	}
	secs := make([]int64, limit)
	for i := range secs {
		secs[i] = int64(10 + i/100)
	}
	page := trimOldestFirst(secondsPage(secs...), limit)
	if len(page) != limit-100 || page[0].Time.Unix() != 11 {
		t.Fatalf("page of %d starting at second %d", len(page), page[0].Time.Unix())
	}
}

func TestFixedWindow(t *testing.T) {
	now := time.Unix(1_000_000, 0) // window boundaries at multiples of 10 s
	fw := newFixedWindow(RateLimit{Requests: 3, Window: 10 * time.Second}, func() time.Time { return now })
	for i := range 3 {
		if ok, _ := fw.allow("a"); !ok {
			t.Fatalf("request %d refused", i)
		}
	}
	now = now.Add(2500 * time.Millisecond)
	if ok, retry := fw.allow("a"); ok || retry != 8 {
		t.Fatalf("4th request: ok=%v retry=%d, want refused with 8 s", ok, retry)
	}
	if ok, _ := fw.allow("b"); !ok {
		t.Fatal("another client shares the first one's count")
	}
	now = now.Add(7500 * time.Millisecond) // the next window
	if ok, _ := fw.allow("a"); !ok {
		t.Fatal("the window did not reset")
	}
	now = now.Add(9999 * time.Millisecond)
	fw.allow("a")
	fw.allow("a")
	if ok, retry := fw.allow("a"); ok || retry != 1 {
		t.Fatalf("near the window's end: ok=%v retry=%d, want refused with 1 s", ok, retry)
	}
}

func TestFixedWindowBoundsClients(t *testing.T) {
	now := time.Unix(0, 0)
	fw := newFixedWindow(RateLimit{Requests: 1, Window: time.Minute}, func() time.Time { return now })
	for i := range maxTrackedClients {
		fw.allow(fmt.Sprint(i))
	}
	if ok, _ := fw.allow("newcomer-1"); !ok {
		t.Fatal("the first client beyond the bound was refused")
	}
	if ok, _ := fw.allow("newcomer-2"); ok {
		t.Fatal("clients beyond the bound do not share a counter")
	}
	if len(fw.counts) > maxTrackedClients+1 {
		t.Fatalf("%d counters", len(fw.counts))
	}
}

func TestClientKey(t *testing.T) {
	for in, want := range map[string]string{
		"203.0.113.7":             "203.0.113.7/32",
		"::ffff:203.0.113.7":      "203.0.113.7/32",
		"2001:db8:1:2:3:4:5:6":    "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::1":    "2001:db8:1:2::/64",
		"not an address":          "?",
		"":                        "?",
		"2001:db8:1:3:3:4:5:6%e0": "2001:db8:1:3::/64",
	} {
		if got := clientKey(in); got != want {
			t.Errorf("clientKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOpenAPIPath(t *testing.T) {
	for in, want := range map[string]string{
		"/api/v1/channels/:name/history": "/api/v1/channels/{name}/history",
		"/files/*path":                   "/files/{path}",
		"/api/v1/health":                 "/api/v1/health",
	} {
		if got := OpenAPIPath(in); got != want {
			t.Errorf("OpenAPIPath(%q) = %q, want %q", in, got, want)
		}
	}
}
