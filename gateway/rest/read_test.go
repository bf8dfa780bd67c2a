package rest_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/raft/fsm"
)

func TestChannelList(t *testing.T) {
	f := newFixture(t, nil)
	var got []rest.ChannelInfo
	f.getJSON("/api/v1/channels", "", &got)
	want := []rest.ChannelInfo{
		{Name: "#pub", Topic: "Welcome", Members: 3, Modes: "+nt"},
		{Name: "#topiconly", Topic: "Nobody here", Members: 0, Modes: "+"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("channels = %+v, want %+v", got, want)
	}
	// A member's bearer does not list restricted channels either.
	f.getJSON("/api/v1/channels", "alice-token", &got)
	if len(got) != 2 {
		t.Fatalf("with a bearer: %+v", got)
	}
}

func TestHistoryShowsEditsAndHidesDeletes(t *testing.T) {
	f := newFixture(t, nil)
	t0 := baseTime
	first := f.post("#pub", "Alice", aliceDID, "frist post", t0, map[string]string{"+freeq.at/sig": "ed25519:kid:sig"})
	gone := f.post("#pub", "bob", "", "oops", t0.Add(time.Second), nil)
	third := f.post("#pub", "bob", "", "hello from a guest", t0.Add(2*time.Second), map[string]string{"+reply": first})
	rev := f.edit("#pub", "Alice", aliceDID, first, "first post", t0.Add(3*time.Second))
	f.remove(gone)

	var got []rest.Message
	f.getJSON("/api/v1/channels/%23pub/history", "", &got)
	if len(got) != 2 {
		t.Fatalf("history = %+v", got)
	}
	edited, guest := got[0], got[1]
	if edited.Text != "first post" || edited.MsgID != rev || edited.ReplacesMsgID != first ||
		edited.Timestamp != t0.Unix() || edited.Sender != "Alice!~alice@palaver/x" {
		t.Errorf("edited message = %+v", edited)
	}
	wantTags := map[string]string{"msgid": rev, "account": aliceDID, "+draft/edit": first}
	for k, v := range wantTags {
		if edited.Tags[k] != v {
			t.Errorf("edited tags %v: %s = %q, want %q", edited.Tags, k, edited.Tags[k], v)
		}
	}
	if guest.MsgID != third || guest.ReplacesMsgID != "" || guest.Tags["+reply"] != first || guest.Tags["msgid"] != third {
		t.Errorf("guest message = %+v", guest)
	}
	if _, ok := guest.Tags["account"]; ok {
		t.Errorf("a guest's message carries account: %v", guest.Tags)
	}
	if guest.ID <= edited.ID {
		t.Errorf("ids %d, %d are not increasing", edited.ID, guest.ID)
	}
	_, body := f.get("/api/v1/channels/pub/history", "")
	if strings.Contains(string(body), `"replaces_msgid"`) && strings.Count(string(body), `"replaces_msgid"`) != 1 {
		t.Errorf("replaces_msgid on an unedited message: %s", body)
	}
	// The same through the msgid route, and the name in any case.
	f.getJSON("/api/v1/history/PUB", "", &got)
	if texts(got) != "first post|hello from a guest" {
		t.Errorf("/history/PUB = %s", texts(got))
	}
}

// walkBySeconds pages a channel's history back by the oldest timestamp held
// until the empty page, and returns the msgids oldest first.
func walkBySeconds(t *testing.T, f *fixture, channel string, limit int) []string {
	t.Helper()
	var all []string
	before := ""
	for pages := 0; ; pages++ {
		if pages > 10000 {
			t.Fatal("the walk does not end")
		}
		var page []rest.Message
		f.getJSON(fmt.Sprintf("/api/v1/channels/%s/history?limit=%d%s", channel, limit, before), "", &page)
		if len(page) == 0 {
			return all
		}
		if len(page) > limit {
			t.Fatalf("page of %d over limit %d", len(page), limit)
		}
		for i := 1; i < len(page); i++ {
			if page[i].Timestamp < page[i-1].Timestamp {
				t.Fatal("page not oldest first")
			}
		}
		all = append(msgids(page), all...)
		before = "&before=" + strconv.FormatInt(page[0].Timestamp, 10)
	}
}

// walkByMsgID pages back through /api/v1/history/{channel} with msgids.
func walkByMsgID(t *testing.T, f *fixture, channel string, limit int) []string {
	t.Helper()
	var all []string
	before := ""
	for {
		var page []rest.Message
		f.getJSON(fmt.Sprintf("/api/v1/history/%s?limit=%d%s", channel, limit, before), "", &page)
		if len(page) == 0 {
			return all
		}
		all = append(msgids(page), all...)
		before = "&before=" + page[0].MsgID
	}
}

// TestPagingWalks stores 1,200 messages, up to 150 in a second, and walks
// them by seconds and by msgid: every message exactly once, in order.
func TestPagingWalks(t *testing.T) {
	f := newFixture(t, nil)
	r := rand.New(rand.NewPCG(1, 2))
	var want []string
	at := baseTime
	for len(want) < 1200 {
		burst := 1 + r.IntN(150)
		for i := 0; i < burst && len(want) < 1200; i++ {
			want = append(want, f.post("#pub", "Alice", aliceDID, "m"+strconv.Itoa(len(want)), at.Add(time.Duration(i)*time.Millisecond), nil))
		}
		at = at.Add(time.Duration(1+r.IntN(2)) * time.Second)
	}
	// Deletes leave holes the walk must not mind.
	f.remove(want[10])
	f.remove(want[600])
	want = slices.Delete(slices.Delete(want, 600, 601), 10, 11)
	for _, limit := range []int{200, 151} {
		if got := walkBySeconds(t, f, "%23pub", limit); !slices.Equal(got, want) {
			t.Fatalf("limit %d: seconds walk returned %d messages, want %d (first difference at %d)", limit, len(got), len(want), firstDiff(got, want))
		}
	}
	for _, limit := range []int{200, 7} {
		if got := walkByMsgID(t, f, "pub", limit); !slices.Equal(got, want) {
			t.Fatalf("limit %d: msgid walk returned %d messages, want %d", limit, len(got), len(want))
		}
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// A second holding more messages than the page size cannot be split by a
// seconds cursor: the page is served whole (never empty), and the msgid
// route still walks it exactly.
func TestPagingOverfullSecond(t *testing.T) {
	f := newFixture(t, nil)
	var want []string
	for i := range 5 {
		want = append(want, f.post("#pub", "Alice", aliceDID, "same second "+strconv.Itoa(i), baseTime.Add(time.Duration(i)*time.Millisecond), nil))
	}
	older := f.post("#pub", "Alice", aliceDID, "older", baseTime.Add(-time.Second), nil)
	var page []rest.Message
	f.getJSON("/api/v1/channels/pub/history?limit=3", "", &page)
	if !slices.Equal(msgids(page), want[2:]) {
		t.Fatalf("page = %v, want the newest three of the second", msgids(page))
	}
	f.getJSON("/api/v1/channels/pub/history?limit=3&before="+strconv.FormatInt(page[0].Timestamp, 10), "", &page)
	if !slices.Equal(msgids(page), []string{older}) {
		t.Fatalf("next page = %v", msgids(page))
	}
	if got := walkByMsgID(t, f, "pub", 3); !slices.Equal(got, append([]string{older}, want...)) {
		t.Fatalf("msgid walk = %v", got)
	}
}

func TestHistoryCursorEdges(t *testing.T) {
	f := newFixture(t, nil)
	a := f.post("#pub", "Alice", aliceDID, "a", baseTime, nil)
	b := f.post("#pub", "Alice", aliceDID, "b", baseTime.Add(time.Second), nil)
	edited := f.edit("#pub", "Alice", aliceDID, b, "b2", baseTime.Add(2*time.Second))
	sec := strconv.FormatInt(baseTime.Unix(), 10)
	tests := []struct {
		target string
		want   string // texts, "|"-joined
	}{
		{"/api/v1/channels/pub/history", "a|b2"},
		{"/api/v1/channels/pub/history?before=" + sec, ""},                                       // strict <
		{"/api/v1/channels/pub/history?before=" + strconv.FormatInt(baseTime.Unix()+1, 10), "a"}, // strict <
		{"/api/v1/channels/pub/history?before=" + b, ""},                                         // a msgid where seconds belong
		{"/api/v1/channels/pub/history?before=0", ""},
		{"/api/v1/channels/pub/history?before=99999999999999999999999", "a|b2"},
		{"/api/v1/channels/pub/history?limit=1", "b2"},
		{"/api/v1/channels/pub/history?limit=99999999999", "a|b2"},
		{"/api/v1/channels/pub/history?before=", "a|b2"},
		{"/api/v1/history/pub?before=" + b, "a"},
		{"/api/v1/history/pub?before=" + edited, "a"}, // a revision names its message
		{"/api/v1/history/pub?before=" + strings.ToLower(b), "a"},
		{"/api/v1/history/pub?before=" + a, ""},
		{"/api/v1/history/pub?before=01ARZ3NDEKTSV4RRFFQ69G5FAV", ""}, // never held here
		{"/api/v1/history/pub?before=" + sec, ""},
	}
	for _, tt := range tests {
		var got []rest.Message
		f.getJSON(tt.target, "", &got)
		if texts(got) != tt.want {
			t.Errorf("GET %s = %q, want %q", tt.target, texts(got), tt.want)
		}
	}
}

func TestTopic(t *testing.T) {
	f := newFixture(t, nil)
	var got rest.Topic
	f.getJSON("/api/v1/channels/PUB/topic", "", &got)
	if got.Channel != "#pub" || got.Topic == nil || *got.Topic != "Welcome" || got.SetBy == nil || *got.SetBy != "Alice" ||
		got.SetAt == nil || *got.SetAt != baseTime.Unix()+1 {
		t.Fatalf("topic = %+v", got)
	}
	_, body := f.get("/api/v1/channels/%23keyed/topic", "alice-token")
	if !strings.Contains(string(body), `"topic":null,"set_by":null,"set_at":null`) {
		t.Fatalf("no topic: %s", body)
	}
	if code := f.status("/api/v1/channels/%23keyed/topic", ""); code != http.StatusForbidden {
		t.Fatalf("restricted topic: %d", code)
	}
	if code := f.status("/api/v1/channels/nope/topic", ""); code != http.StatusNotFound {
		t.Fatalf("unknown channel topic: %d", code)
	}
}

func TestPins(t *testing.T) {
	f := newFixture(t, nil)
	old := f.post("#pub", "Alice", aliceDID, "old", baseTime, nil)
	f.edit("#pub", "Alice", aliceDID, old, "old, edited", baseTime.Add(time.Second))
	gone := f.post("#pub", "bob", "", "gone", baseTime.Add(2*time.Second), nil)
	f.remove(gone)
	pinnedAt := baseTime.Add(time.Minute)
	f.state.update(func(fx *fsm.Fixture) {
		fx.Channel("#pub").Pins = []fsm.PinEntry{ // newest first
			{MsgID: gone, PinnedBy: "Alice", PinnedAt: pinnedAt.Add(time.Second).UnixMilli()},
			{MsgID: old, PinnedBy: "Alice", PinnedAt: pinnedAt.UnixMilli()},
		}
	})
	var got rest.ChannelPins
	f.getJSON("/api/v1/channels/pub/pins", "", &got)
	want := []rest.Pin{
		{MsgID: gone, From: "unknown", Text: "[message not found]", PinnedBy: "Alice", PinnedAt: "2026-03-01T12:01:01Z"},
		{MsgID: old, From: "Alice", Text: "old, edited", PinnedBy: "Alice", PinnedAt: "2026-03-01T12:01:00Z"},
	}
	if got.Channel != "#pub" || !slices.Equal(got.Pins, want) {
		t.Fatalf("pins = %+v", got)
	}
	var list []rest.Pin
	f.getJSON("/api/v1/pins/pub", "", &list)
	if !slices.Equal(list, want) {
		t.Fatalf("/pins/pub = %+v", list)
	}
	_, body := f.get("/api/v1/pins/%23secret", "alice-token")
	if strings.TrimSpace(string(body)) != "[]" {
		t.Fatalf("no pins: %s", body)
	}
	if code := f.status("/api/v1/channels/secret/pins", "mallory-token"); code != http.StatusForbidden {
		t.Fatalf("restricted pins for a non-member: %d", code)
	}
}
