package irc_test

import (
	"bytes"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// keptTag is a TAGMSG's tags that keep it in history (the default --tagmsg-persist).
const keptTag = "@+client-only-tag-test=success;+draft/persist "

// chatLines keeps the PRIVMSG and TAGMSG lines of a history batch (event playback adds the
// channel's JOINs), each as "TAGMSG <msgid>" or its text.
func chatLines(body []ircmsg.Message) []string {
	var out []string
	for _, m := range body {
		switch m.Command {
		case "TAGMSG":
			out = append(out, "TAGMSG "+m.Tags["msgid"])
		case "PRIVMSG":
			out = append(out, m.Param(1))
		}
	}
	return out
}

// sendKept sends a kept TAGMSG from c to target and returns its echo, checked: the client tags
// and a msgid.
func sendKept(t *testing.T, c *ircclient.Client, nick, target string) ircmsg.Message {
	t.Helper()
	sendLines(t, c, keptTag+"TAGMSG "+target)
	echo := expectFrom(t, c, nick, "TAGMSG", target)
	if echo.Tags["msgid"] == "" || echo.Tags["+client-only-tag-test"] != "success" {
		t.Fatalf("echo %q: want a msgid and the client tags", echo.String())
	}
	return echo
}

// expectRelay reads the TAGMSG relayed to c and checks its msgid and client tags.
func expectRelay(t *testing.T, c *ircclient.Client, from, target, msgid string) {
	t.Helper()
	m := expectFrom(t, c, from, "TAGMSG", target)
	if m.Tags["msgid"] != msgid || m.Tags["+client-only-tag-test"] != "success" {
		t.Fatalf("relay %q: want msgid %s and the client tags", m.String(), msgid)
	}
}

// TestIRCKeptTagmsgHistory: a TAGMSG carrying +draft/persist (or +persist) is echoed and relayed
// with a msgid, kept, and replayed by every CHATHISTORY subcommand, and by the replay after
// JOIN, to draft/event-playback clients only, counted by the limit like a message (IRCv3
// chathistory, event-playback, message-tags); a client without the capability, the REST routes,
// search, export and MCP never see it. Channels and direct messages alike.
func TestIRCKeptTagmsgHistory(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	aliceKey, bobKey := newEd25519(t), newEd25519(t)
	alice, _ := loginAs(t, n, aliceKey, "ktalice", append(slices.Clone(playbackCaps), "message-tags")...)
	bob, _ := loginAs(t, n, bobKey, "ktbob", append(slices.Clone(historyCaps), "message-tags")...)
	joinChannels(t, alice, "#kt")
	joinChannels(t, bob, "#kt")
	drain(t, alice)

	sendLines(t, alice, "PRIVMSG #kt :before")
	before := expectFrom(t, alice, "ktalice", "PRIVMSG", "#kt", "before").Tags["msgid"]
	echo := sendKept(t, alice, "ktalice", "#kt")
	tag := echo.Tags["msgid"]
	expectFrom(t, bob, "ktalice", "PRIVMSG", "#kt", "before")
	expectRelay(t, bob, "ktalice", "#kt", tag)
	sendLines(t, alice, "@+typing=active TAGMSG #kt", "@+persist TAGMSG #kt", "PRIVMSG #kt :after")
	expectFrom(t, alice, "ktalice", "TAGMSG", "#kt")
	plus := expectFrom(t, alice, "ktalice", "TAGMSG", "#kt").Tags["msgid"]
	after := expectFrom(t, alice, "ktalice", "PRIVMSG", "#kt", "after").Tags["msgid"]
	expectFrom(t, bob, "ktalice", "PRIVMSG", "#kt", "after")

	all := chatLines(historyBatch(t, alice, "CHATHISTORY LATEST #kt * 50", "#kt"))
	if want := []string{"before", "TAGMSG " + tag, "TAGMSG " + plus, "after"}; !slices.Equal(all, want) {
		t.Fatalf("history with event playback: %q, want %q (the typing TAGMSG is not kept)", all, want)
	}
	body := historyBatch(t, alice, "CHATHISTORY LATEST #kt * 50", "#kt")
	for _, m := range body {
		if m.Command == "TAGMSG" && m.Tags["msgid"] == tag {
			if m.Tags["+client-only-tag-test"] != "success" || m.Param(0) != "#kt" || m.Tags["time"] != echo.Tags["time"] ||
				!strings.HasPrefix(m.Source, "ktalice!") || m.Tags["account"] != aliceKey.DID() {
				t.Fatalf("replayed TAGMSG %q, echo was %q", m.String(), echo.String())
			}
		}
	}
	ref := func(id string) string { return "msgid=" + id }
	for _, tc := range []struct {
		command          string
		playback, others []string
	}{
		{"CHATHISTORY LATEST #kt * 2", []string{"TAGMSG " + plus, "after"}, []string{"before", "after"}},
		{"CHATHISTORY BEFORE #kt " + ref(after) + " 2", []string{"TAGMSG " + tag, "TAGMSG " + plus}, []string{"before"}},
		{"CHATHISTORY AFTER #kt " + ref(before) + " 1", []string{"TAGMSG " + tag}, []string{"after"}},
		{"CHATHISTORY AFTER #kt " + ref(tag) + " 5", []string{"TAGMSG " + plus, "after"}, []string{"after"}},
		{"CHATHISTORY BETWEEN #kt " + ref(before) + " " + ref(after) + " 10", []string{"TAGMSG " + tag, "TAGMSG " + plus}, nil},
		{"CHATHISTORY BETWEEN #kt " + ref(after) + " " + ref(before) + " 1", []string{"TAGMSG " + plus}, nil},
		{"CHATHISTORY AROUND #kt " + ref(tag) + " 3", []string{"before", "TAGMSG " + tag, "TAGMSG " + plus}, []string{"before", "after"}},
	} {
		if got := chatLines(historyBatch(t, alice, tc.command, "#kt")); !slices.Equal(got, tc.playback) {
			t.Errorf("%s with event playback: %q, want %q", tc.command, got, tc.playback)
		}
		if got := chatLines(historyBatch(t, bob, tc.command, "#kt")); !slices.Equal(got, tc.others) {
			t.Errorf("%s without event playback: %q, want %q", tc.command, got, tc.others)
		}
	}

	// The replay after JOIN: with event playback it holds the kept TAGMSGs, without it not.
	for _, tc := range []struct {
		nick string
		caps []string
		want []string
	}{
		{"ktplain", []string{"batch", "server-time", "message-tags"}, []string{"before", "after"}},
		{"ktplay", []string{"batch", "server-time", "message-tags", "draft/event-playback"}, all},
	} {
		c, _ := guest(t, n, tc.nick, tc.caps...)
		sendLines(t, c, "JOIN #kt")
		_, replay := batchBody(t, c, "chathistory")
		if got := chatLines(replay); !slices.Equal(got, tc.want) {
			t.Errorf("join replay for %s: %q, want %q", tc.nick, got, tc.want)
		}
	}

	// REST, search, export and MCP serve messages only; the lookup by msgid finds no message.
	x := url.PathEscape("#kt")
	for _, path := range []string{
		"/api/v1/channels/" + x + "/history",
		"/api/v1/history/kt",
		"/api/v1/channels/" + x + "/export",
	} {
		if got := restField(t, n, path, "msgid"); !slices.Equal(got, []string{before, after}) {
			t.Errorf("GET %s: %q, want %q", path, got, []string{before, after})
		}
	}
	if got := restField(t, n, "/api/v1/search?channel="+url.QueryEscape("#kt")+"&q=success", "msgid"); len(got) != 0 {
		t.Errorf("search finds %q", got)
	}
	if resp, body := httpDo(t, "GET", "http://"+n.HTTPAddr()+"/api/v1/messages/"+tag, "", nil); resp.StatusCode != 404 {
		t.Errorf("GET /api/v1/messages/%s: %d %s, want 404", tag, resp.StatusCode, body)
	}
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"freeq_history","arguments":{"channel":"#kt","limit":50}}}`
	resp, body2 := httpDo(t, "POST", "http://"+n.HTTPAddr()+"/mcp", "", bytes.NewReader([]byte(call)))
	if resp.StatusCode != 200 || !strings.Contains(string(body2), after) || strings.Contains(string(body2), tag) || strings.Contains(string(body2), plus) {
		t.Errorf("MCP freeq_history: %d %s", resp.StatusCode, body2)
	}

	// A direct message between two accounts.
	sendLines(t, alice, "PRIVMSG ktbob :dm hello")
	expectFrom(t, alice, "ktalice", "PRIVMSG", "ktbob", "dm hello")
	expectFrom(t, bob, "ktalice", "PRIVMSG", "ktbob", "dm hello")
	dmEcho := sendKept(t, alice, "ktalice", "ktbob")
	dmTag := dmEcho.Tags["msgid"]
	expectRelay(t, bob, "ktalice", "ktbob", dmTag)
	dm := historyBatch(t, alice, "CHATHISTORY LATEST ktbob * 10", "ktbob")
	if got := chatLines(dm); !slices.Equal(got, []string{"dm hello", "TAGMSG " + dmTag}) {
		t.Fatalf("DM history with event playback: %q", got)
	}
	if last := dm[len(dm)-1]; last.Param(0) != "ktbob" || last.Tags["+client-only-tag-test"] != "success" {
		t.Fatalf("replayed DM TAGMSG %q: want it addressed to ktbob with its client tags", last.String())
	}
	if got := chatLines(historyBatch(t, bob, "CHATHISTORY LATEST ktalice * 10", "ktalice")); !slices.Equal(got, []string{"dm hello"}) {
		t.Fatalf("DM history without event playback: %q", got)
	}
	if got := chatLines(historyBatch(t, alice, "CHATHISTORY BEFORE ktbob "+ref(dmTag)+" 10", "ktbob")); !slices.Equal(got, []string{"dm hello"}) {
		t.Fatalf("DM BEFORE the TAGMSG: %q", got)
	}
	// TARGETS dates a conversation by its latest kept event for an event-playback client only.
	targetTime := func(c *ircclient.Client, name string) string {
		t.Helper()
		sendLines(t, c, "CHATHISTORY TARGETS * * 50")
		_, lines := batchBody(t, c, "draft/chathistory-targets")
		for _, l := range lines {
			if l.Param(1) == name {
				return l.Param(2)
			}
		}
		t.Fatalf("TARGETS lists no %s: %q", name, shapes(lines))
		return ""
	}
	if got := targetTime(alice, "ktbob"); got != dmEcho.Tags["time"] {
		t.Errorf("TARGETS with event playback dates the DM %s, want the kept TAGMSG's %s", got, dmEcho.Tags["time"])
	}
}

// TestIRCKeptTagmsgOff: with an empty --tagmsg-persist no TAGMSG is kept; it is relayed live.
func TestIRCKeptTagmsgOff(t *testing.T) {
	n := startNode(t, t.TempDir(), func(c *Config) { c.TagmsgPersist = nil })
	alice, _ := guest(t, n, "koalice", append(slices.Clone(playbackCaps), "message-tags")...)
	bob, _ := guest(t, n, "kobob", "message-tags")
	joinChannels(t, alice, "#ko")
	joinChannels(t, bob, "#ko")
	tag := sendKept(t, alice, "koalice", "#ko").Tags["msgid"]
	expectRelay(t, bob, "koalice", "#ko", tag)
	sendLines(t, alice, "PRIVMSG #ko :only this")
	expectFrom(t, alice, "koalice", "PRIVMSG", "#ko", "only this")
	if got := chatLines(historyBatch(t, alice, "CHATHISTORY LATEST #ko * 10", "#ko")); !slices.Equal(got, []string{"only this"}) {
		t.Fatalf("history: %q", got)
	}
}

// TestIRCKeptTagmsgAcrossNodes: a kept TAGMSG sent on node a is stored there, exchanged like a
// message and stored once on nodes b and c, relayed live from each node's copy with the same
// msgid, and replayed by each node's CHATHISTORY to draft/event-playback clients only; the same
// for a direct message to an account connected to another node.
func TestIRCKeptTagmsgAcrossNodes(t *testing.T) {
	nodes := startCluster(t)
	a, b, c := nodes[0], nodes[1], nodes[2]
	playback := append(slices.Clone(playbackCaps), "message-tags")
	alice, _ := login(t, a, "kcalice", playback...)
	bob, _ := login(t, b, "kcbob", append(slices.Clone(historyCaps), "message-tags")...)
	carol, _ := login(t, c, "kccarol", playback...)
	joinChannels(t, alice, "#kc")
	joinChannels(t, bob, "#kc")
	joinChannels(t, carol, "#kc")
	eventually(t, "every member on node a", func() bool {
		sendLines(t, alice, "NAMES #kc")
		m := expect(t, alice, "353", "#kc")
		return strings.Contains(m.Param(3), "kcbob") && strings.Contains(m.Param(3), "kccarol")
	})

	sendLines(t, alice, "PRIVMSG #kc :one")
	expectFrom(t, alice, "kcalice", "PRIVMSG", "#kc", "one")
	expectFrom(t, bob, "kcalice", "PRIVMSG", "#kc", "one")
	expectFrom(t, carol, "kcalice", "PRIVMSG", "#kc", "one")
	tag := sendKept(t, alice, "kcalice", "#kc").Tags["msgid"]
	expectRelay(t, bob, "kcalice", "#kc", tag)
	expectRelay(t, carol, "kcalice", "#kc", tag)
	sendLines(t, alice, "PRIVMSG #kc :two")
	expectFrom(t, alice, "kcalice", "PRIVMSG", "#kc", "two")
	expectFrom(t, bob, "kcalice", "PRIVMSG", "#kc", "two")
	expectFrom(t, carol, "kcalice", "PRIVMSG", "#kc", "two")

	want := []string{"one", "TAGMSG " + tag, "two"}
	for _, r := range []struct {
		name string
		c    *ircclient.Client
		want []string
	}{{"node a", alice, want}, {"node c", carol, want}, {"node b without event playback", bob, []string{"one", "two"}}} {
		if got := chatLines(historyBatch(t, r.c, "CHATHISTORY LATEST #kc * 10", "#kc")); !slices.Equal(got, r.want) {
			t.Errorf("history on %s: %q, want %q", r.name, got, r.want)
		}
	}
	// A client with event playback on node b gets it from node b's copy.
	dave, _ := guest(t, b, "kcdave", append(slices.Clone(playbackCaps), "message-tags")...)
	joinChannels(t, dave, "#kc")
	if got := chatLines(historyBatch(t, dave, "CHATHISTORY AROUND #kc msgid="+tag+" 3", "#kc")); !slices.Equal(got, want) {
		t.Errorf("AROUND on node b: %q, want %q", got, want)
	}
	for _, nd := range nodes {
		if got := restField(t, nd, "/api/v1/channels/kc/history", "text"); !slices.Equal(got, []string{"one", "two"}) {
			t.Errorf("REST history on %s: %q", nd.ServerDID(), got)
		}
	}

	// A direct message to an account on another node: relayed there, kept for the sender.
	dmTag := sendKept(t, alice, "kcalice", "kcbob").Tags["msgid"]
	expectRelay(t, bob, "kcalice", "kcbob", dmTag)
	if got := chatLines(historyBatch(t, alice, "CHATHISTORY LATEST kcbob * 10", "kcbob")); !slices.Equal(got, []string{"TAGMSG " + dmTag}) {
		t.Errorf("DM history on node a: %q", got)
	}
	if got := chatLines(historyBatch(t, bob, "CHATHISTORY LATEST kcalice * 10", "kcalice")); len(got) != 0 {
		t.Errorf("DM history on node b without event playback: %q", got)
	}
}
