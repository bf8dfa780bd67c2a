package irc_test

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// restTexts GETs a REST list of messages and returns their texts, failing unless the status is 200.
func restTexts(t *testing.T, n *Node, path string) []string {
	t.Helper()
	return restField(t, n, path, "text")
}

// restField reads a REST route's array of messages and returns the string field of each.
func restField(t *testing.T, n *Node, path, field string) []string {
	t.Helper()
	resp, body := httpDo(t, "GET", "http://"+n.HTTPAddr()+path, "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	var msgs []map[string]any
	if err := json.Unmarshal(body, &msgs); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, body)
	}
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		v, _ := m[field].(string)
		out = append(out, v)
	}
	return out
}

// TestRestrictedHistoryDiesWithItsChannel: a guest creates a channel, speaks while it is public,
// makes it +i, says a secret and leaves, so the channel is deleted. Whoever creates the name again
// sees the public message and never the secret, over IRC (JOIN replay, CHATHISTORY) and REST
// (history, search, export, the message and verify lookups).
func TestRestrictedHistoryDiesWithItsChannel(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	owner, _ := guest(t, n, "hiowner", "echo-message", "message-tags", "server-time")
	joinChannels(t, owner, "#x")
	sendLines(t, owner, "PRIVMSG #x :public words")
	expectFrom(t, owner, "hiowner", "PRIVMSG", "#x", "public words")
	sendLines(t, owner, "MODE #x +i")
	expectFrom(t, owner, "hiowner", "MODE", "#x", "+i")
	sendLines(t, owner, "PRIVMSG #x :secret words")
	secretID := expectFrom(t, owner, "hiowner", "PRIVMSG", "#x", "secret words").Tags["msgid"]
	sendLines(t, owner, "PART #x")
	expectFrom(t, owner, "hiowner", "PART", "#x")
	eventually(t, "#x to be deleted", func() bool {
		gone := false
		n.Machine().Read(func(st *fsm.State) { gone = !st.ChannelExists("#x") })
		return gone
	})

	replayer, _ := guest(t, n, "hitaker", "batch", "server-time")
	sendLines(t, replayer, "JOIN #x")
	expectFrom(t, replayer, "hitaker", "JOIN", "#x")
	_, body := batchBody(t, replayer, "chathistory")
	if got := texts(body); !slices.Equal(got, []string{"public words"}) {
		t.Fatalf("JOIN replay of the new #x: %q", got)
	}
	// The new channel's operator may pin the old msgid, but PINS does not show its text.
	sendLines(t, replayer, "PIN #x "+secretID, "PINS #x")
	pins := readUntil(t, replayer, "the end of PINS", func(m ircmsg.Message) bool {
		return m.Command == "NOTICE" && strings.Contains(m.Param(1), "pinned message(s)")
	})
	for _, m := range pins {
		if strings.Contains(m.String(), "secret") {
			t.Fatalf("PINS shows the earlier channel's secret: %s", m.String())
		}
	}
	if _, ok := findMsg(pins, "NOTICE", secretID, "[message not found]"); !ok {
		t.Fatalf("PINS of the old msgid: %q", lines(pins))
	}
	fetcher, _ := guest(t, n, "hifetcher", historyCaps...)
	joinChannels(t, fetcher, "#x")
	for _, cmd := range []string{"CHATHISTORY LATEST #x * 10", "CHATHISTORY AROUND #x msgid=" + secretID + " 10"} {
		if got := texts(historyBatch(t, fetcher, cmd, "#x")); !slices.Equal(got, []string{"public words"}) {
			t.Fatalf("%s: %q", cmd, got)
		}
	}

	x := url.PathEscape("#x")
	for _, path := range []string{
		"/api/v1/channels/" + x + "/history",
		"/api/v1/history/" + x,
		"/api/v1/search?channel=" + url.QueryEscape("#x") + "&q=words",
		"/api/v1/channels/" + x + "/export",
	} {
		if got := restTexts(t, n, path); !slices.Equal(got, []string{"public words"}) {
			t.Fatalf("GET %s: %q", path, got)
		}
	}
	resp, pinsBody := httpDo(t, "GET", "http://"+n.HTTPAddr()+"/api/v1/channels/"+x+"/pins", "", nil)
	if resp.StatusCode != 200 || strings.Contains(string(pinsBody), "secret") || !strings.Contains(string(pinsBody), "[message not found]") {
		t.Fatalf("GET pins: %d %s", resp.StatusCode, pinsBody)
	}
	for _, path := range []string{"/api/v1/messages/" + secretID, "/api/v1/verify/" + secretID} {
		resp, body := httpDo(t, "GET", "http://"+n.HTTPAddr()+path, "", nil)
		if resp.StatusCode != 404 || strings.Contains(string(body), "secret") || strings.Contains(string(body), "#x") {
			t.Fatalf("GET %s: %d %s, want a 404 that names nothing", path, resp.StatusCode, body)
		}
	}
}

// TestRestrictedMessageLookupNamesNoChannel: the 403 of a message lookup in a restricted channel
// does not say which channel holds the message.
func TestRestrictedMessageLookupNamesNoChannel(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	owner, _ := guest(t, n, "hlowner", "echo-message", "message-tags")
	chanOp(t, owner, "#hiddenroom", "+k sesame")
	sendLines(t, owner, "PRIVMSG #hiddenroom :behind the key")
	id := expectFrom(t, owner, "hlowner", "PRIVMSG", "#hiddenroom", "behind the key").Tags["msgid"]
	for _, path := range []string{"/api/v1/messages/" + id, "/api/v1/verify/" + id} {
		resp, body := httpDo(t, "GET", "http://"+n.HTTPAddr()+path, "", nil)
		if resp.StatusCode != 403 || strings.Contains(string(body), "hiddenroom") {
			t.Fatalf("GET %s: %d %s, want a 403 that does not name the channel", path, resp.StatusCode, body)
		}
	}
}
