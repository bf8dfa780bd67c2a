package rest_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/gateway/rest"
)

// TestNodeAuthorizationMatrix: public, +i and +k channels made over IRC,
// read with no bearer, a non-member's bearer and a member's bearer.
func TestNodeAuthorizationMatrix(t *testing.T) {
	n := sharedNode(t)
	a := newAPI(t, n)
	alice := loginUser(t, n, "mx-alice", ircCaps...)
	mallory := loginUser(t, n, "mx-mallory", ircCaps...)
	msg := map[string]string{}
	for _, ch := range []string{"#mx-open", "#mx-invite", "#mx-keyed"} {
		alice.join(t, ch)
	}
	alice.send(t, "MODE #mx-invite +i", "MODE #mx-keyed +k sesame", "TOPIC #mx-invite :invite only")
	alice.sync(t)
	for _, ch := range []string{"#mx-open", "#mx-invite", "#mx-keyed"} {
		msg[ch] = alice.say(t, ch, "hello matrix "+ch)
	}
	alice.send(t, "PIN #mx-invite "+msg["#mx-invite"])
	alice.sync(t)
	mallory.join(t, "#mx-open")

	routes := []string{
		"/api/v1/channels/%s/history", "/api/v1/history/%s", "/api/v1/search?q=matrix&channel=%s",
		"/api/v1/channels/%s/topic", "/api/v1/channels/%s/pins", "/api/v1/pins/%s",
	}
	const ok, forbidden = http.StatusOK, http.StatusForbidden
	for _, tt := range []struct {
		channel string
		token   string
		who     string
		want    int
	}{
		{"mx-open", "", "nobody", ok},
		{"mx-open", mallory.token, "a non-member", ok},
		{"mx-open", alice.token, "a member", ok},
		{"mx-invite", "", "nobody", forbidden},
		{"mx-invite", mallory.token, "a non-member", forbidden},
		{"mx-invite", alice.token, "a member", ok},
		{"mx-keyed", "", "nobody", forbidden},
		{"mx-keyed", mallory.token, "a non-member", forbidden},
		{"mx-keyed", alice.token, "a member", ok},
	} {
		for _, route := range routes {
			path := strings.Replace(route, "%s", url.PathEscape("#"+tt.channel), 1)
			if code := a.status(path, tt.token); code != tt.want {
				t.Errorf("GET %s by %s = %d, want %d", path, tt.who, code, tt.want)
			}
		}
		if code := a.status("/api/v1/messages/"+msg["#"+tt.channel], tt.token); code != tt.want {
			t.Errorf("message of %s by %s = %d, want %d", tt.channel, tt.who, code, tt.want)
		}
		wantExport := ok
		if tt.channel != "mx-open" {
			wantExport = forbidden // public channels only, whoever asks
		}
		if code := a.status("/api/v1/channels/"+tt.channel+"/export", tt.token); code != wantExport {
			t.Errorf("export of %s by %s = %d, want %d", tt.channel, tt.who, code, wantExport)
		}
	}
	var history []rest.Message
	a.getJSON("/api/v1/channels/mx-invite/history", alice.token, &history)
	if len(history) != 1 || history[0].MsgID != msg["#mx-invite"] || history[0].Tags["account"] != alice.did {
		t.Fatalf("member's history = %+v", history)
	}
	var pins rest.ChannelPins
	a.getJSON("/api/v1/channels/mx-invite/pins", alice.token, &pins)
	if len(pins.Pins) != 1 || pins.Pins[0].MsgID != msg["#mx-invite"] || pins.Pins[0].PinnedBy != "mx-alice" ||
		pins.Pins[0].From != "mx-alice" || pins.Pins[0].Text != "hello matrix #mx-invite" {
		t.Fatalf("pins = %+v", pins)
	}
	if _, err := time.Parse(time.RFC3339, pins.Pins[0].PinnedAt); err != nil {
		t.Fatalf("pinned_at %q: %v", pins.Pins[0].PinnedAt, err)
	}
	// The founder keeps read access after leaving; a restricted channel is
	// never listed.
	alice.send(t, "PART #mx-invite")
	alice.sync(t)
	if code := a.status("/api/v1/channels/mx-invite/history", alice.token); code != ok {
		t.Errorf("founder after PART: %d", code)
	}
	var list []rest.ChannelInfo
	a.getJSON("/api/v1/channels", alice.token, &list)
	for _, ch := range list {
		if ch.Name == "#mx-invite" || ch.Name == "#mx-keyed" {
			t.Errorf("restricted channel listed: %+v", ch)
		}
		if ch.Name == "#mx-open" && (ch.Members != 2 || ch.Modes != "+nt") {
			t.Errorf("open channel listed as %+v", ch)
		}
	}
	if !slices.ContainsFunc(list, func(c rest.ChannelInfo) bool { return c.Name == "#mx-open" }) {
		t.Errorf("#mx-open not listed: %+v", list)
	}
	for path, want := range map[string]int{
		"/api/v1/channels/mx-nowhere/history":          http.StatusNotFound,
		"/api/v1/search?channel=mx-nowhere&q=x":        http.StatusNotFound,
		"/api/v1/channels/mx-open/history?limit=-1":    http.StatusBadRequest,
		"/api/v1/channels/mx-open/history?before=soon": http.StatusBadRequest,
		"/api/v1/channels/mx%2Fopen/history":           http.StatusNotFound,
		"/api/v1/channels/mx%00open/history":           http.StatusBadRequest,
	} {
		if code := a.status(path, ""); code != want {
			t.Errorf("GET %s = %d, want %d", path, code, want)
		}
	}
}

// TestNodePagingWalk sends 1,100 messages over IRC from four clients and
// walks them back page by page: by msgid, every message exactly once; by
// seconds, every message of every second that fits a page exactly once.
func TestNodePagingWalk(t *testing.T) {
	n := sharedNode(t)
	a := newAPI(t, n)
	const senders, each = 4, 275
	const channel = "#walk"
	clients := make([]*ircUser, senders)
	for i := range clients {
		clients[i] = loginUser(t, n, fmt.Sprintf("walker%d", i))
		clients[i].join(t, channel)
	}
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				if err := c.Send(fmt.Sprintf("PRIVMSG %s :w%d-%d", channel, i, j)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, c := range clients {
		c.sync(t) // each client's messages are stored before its PONG
	}

	byMsgID := walk(t, a, "/api/v1/history/walk?limit=200", func(page []rest.Message) string {
		return "&before=" + page[0].MsgID
	})
	if len(byMsgID) != senders*each {
		t.Fatalf("msgid walk: %d messages, want %d", len(byMsgID), senders*each)
	}
	seen := map[string]bool{}
	next := make([]int, senders) // each sender's messages arrive in its send order
	perSecond := map[int64]int{}
	for i, m := range byMsgID {
		if seen[m.MsgID] {
			t.Fatalf("duplicate %s", m.MsgID)
		}
		seen[m.MsgID] = true
		var s, j int
		if _, err := fmt.Sscanf(m.Text, "w%d-%d", &s, &j); err != nil || next[s] != j {
			t.Fatalf("message %d is %q; sender %d's next should be %d", i, m.Text, s, next[s])
		}
		next[s]++
		if i > 0 && m.Timestamp < byMsgID[i-1].Timestamp {
			t.Fatal("the walk goes back in time")
		}
		perSecond[m.Timestamp]++
	}

	bySeconds := walk(t, a, "/api/v1/channels/%23walk/history?limit=200", func(page []rest.Message) string {
		return "&before=" + strconv.FormatInt(page[0].Timestamp, 10)
	})
	got := map[string]bool{}
	for _, m := range bySeconds {
		if got[m.MsgID] {
			t.Fatalf("seconds walk: duplicate %s", m.MsgID)
		}
		got[m.MsgID] = true
	}
	for _, m := range byMsgID {
		// Only a second holding more than a page can lose messages.
		if !got[m.MsgID] && perSecond[m.Timestamp] <= 200 {
			t.Fatalf("seconds walk lost %s (%q) of a second with %d messages", m.MsgID, m.Text, perSecond[m.Timestamp])
		}
	}
	t.Logf("%d messages over %d seconds; seconds walk returned %d", len(byMsgID), len(perSecond), len(bySeconds))
}

// walk pages back from path until the empty page and returns the messages
// oldest first.
func walk(t *testing.T, a *api, path string, cursor func([]rest.Message) string) []rest.Message {
	t.Helper()
	var all []rest.Message
	next := ""
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("the walk does not end")
		}
		var page []rest.Message
		a.getJSON(path+next, "", &page)
		if len(page) == 0 {
			return all
		}
		all = append(slices.Clone(page), all...)
		next = cursor(page)
	}
}

// TestNodeEditsAndDeletes: edits and deletes made over IRC show in history,
// search, export and message lookup.
func TestNodeEditsAndDeletes(t *testing.T) {
	n := sharedNode(t)
	a := newAPI(t, n)
	owner := loginUser(t, n, "ed-owner", ircCaps...)
	owner.join(t, "#edits")
	gus := guestUser(t, n, "ed-gus", ircCaps...) // guests may edit and delete without signing
	gus.join(t, "#edits")
	root := gus.say(t, "#edits", "frist quick post")
	rev := gus.say(t, "#edits", "first quick post", "+draft/edit="+root)
	doomed := gus.say(t, "#edits", "doomed quick words")
	kept := gus.say(t, "#edits", "kept words")
	gus.send(t, "@+draft/delete="+doomed+" TAGMSG #edits")
	gus.sync(t)

	var history []rest.Message
	a.getJSON("/api/v1/channels/edits/history", "", &history)
	if texts(history) != "first quick post|kept words" {
		t.Fatalf("history = %q", texts(history))
	}
	if history[0].MsgID != rev || history[0].ReplacesMsgID != root || history[0].Tags["+draft/edit"] != root {
		t.Fatalf("edited message = %+v", history[0])
	}
	if history[1].MsgID != kept {
		t.Fatalf("kept message = %+v", history[1])
	}
	for q, want := range map[string]string{"quick": "first quick post", "frist": "", "doomed": "", "first post": "first quick post"} {
		var found []rest.Message
		a.getJSON("/api/v1/search?channel=%23edits&q="+url.QueryEscape(q), "", &found)
		if texts(found) != want {
			t.Errorf("search %q = %q, want %q", q, texts(found), want)
		}
	}
	var export []rest.Message
	a.getJSON("/api/v1/channels/edits/export", "", &export)
	if !slices.Equal(msgids(export), msgids(history)) {
		t.Errorf("export %v, history %v", msgids(export), msgids(history))
	}
	resp, md := a.get("/api/v1/channels/edits/export?format=markdown", "")
	if resp.Header.Get("Content-Type") != "text/markdown; charset=utf-8" ||
		!strings.HasPrefix(string(md), "# #edits — exported transcript\n") ||
		!strings.Contains(string(md), "**ed-gus** ("+rev+"): first quick post\n") || strings.Contains(string(md), "doomed") {
		t.Errorf("markdown export:\n%s", md)
	}
	var stored rest.StoredMessage
	a.getJSON("/api/v1/messages/"+root, "", &stored)
	if stored.Text != "frist quick post" || stored.SenderDID != nil || stored.Channel != "#edits" {
		t.Errorf("the original as stored = %+v", stored)
	}
	a.getJSON("/api/v1/messages/"+rev, "", &stored)
	if stored.Text != "first quick post" || stored.ReplacesMsgID == nil || *stored.ReplacesMsgID != root {
		t.Errorf("the revision as stored = %+v", stored)
	}
	if code := a.status("/api/v1/messages/"+doomed, ""); code != http.StatusNotFound {
		t.Errorf("deleted message lookup = %d", code)
	}
	// Pins follow the root and show the current revision.
	owner.send(t, "PIN #edits "+rev)
	owner.sync(t)
	var pins []rest.Pin
	a.getJSON("/api/v1/pins/edits", "", &pins)
	if len(pins) != 1 || pins[0].MsgID != root || pins[0].Text != "first quick post" || pins[0].From != "ed-gus" {
		t.Errorf("pins = %+v", pins)
	}
}
