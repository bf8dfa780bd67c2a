package irc_test

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// TestIRCStatusMsgNotInHistory: a status message (PRIVMSG @#chan, +#chan) is live only. Nobody
// reads it back: not a plain member, not a voiced one, not even an operator who received it, in
// any CHATHISTORY subcommand (with or without event playback), the JOIN replay, the REST history,
// search, export, or a lookup by its msgid. So a reader without the prefix can never see it.
func TestIRCStatusMsgNotInHistory(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	op, _ := login(t, n, "shop", playbackCaps...)
	chanOp(t, op, "#sth")
	voiced, _ := guest(t, n, "shvoice", append(slices.Clone(historyCaps), "message-tags")...)
	plain, _ := guest(t, n, "shplain", append(slices.Clone(playbackCaps), "message-tags")...)
	joinChannels(t, voiced, "#sth")
	joinChannels(t, plain, "#sth")
	sendLines(t, op, "MODE #sth +v shvoice")
	expectFrom(t, plain, "shop", "MODE", "#sth", "+v", "shvoice")

	sendLines(t, plain, "PRIVMSG @#sth :secret for ops", "PRIVMSG +#sth :secret for voices", "NOTICE @#sth :secret notice")
	var statusIDs []string
	for _, want := range []string{"secret for ops", "secret for voices", "secret notice"} {
		msgs := readUntil(t, op, want, func(m ircmsg.Message) bool { return m.Param(1) == want })
		got := msgs[len(msgs)-1]
		if got.Tags["msgid"] == "" {
			t.Fatalf("status message without msgid: %s", got.String())
		}
		statusIDs = append(statusIDs, got.Tags["msgid"])
	}
	sendLines(t, op, "PRIVMSG #sth :public words")
	public := expectFrom(t, op, "shop", "PRIVMSG", "#sth", "public words").Tags["msgid"]

	noSecret := func(where string, msgs []ircmsg.Message) {
		t.Helper()
		for _, m := range msgs {
			if strings.Contains(m.String(), "secret") || strings.HasPrefix(m.Param(0), "@") || strings.HasPrefix(m.Param(0), "+") {
				t.Fatalf("%s shows a status message: %s", where, m.String())
			}
		}
		if got := texts(msgs); !slices.Equal(got, []string{"public words"}) {
			t.Fatalf("%s: %q, want the public message", where, got)
		}
	}
	for name, c := range map[string]*ircclient.Client{"operator": op, "voiced": voiced, "plain": plain} {
		for _, cmd := range []string{
			"CHATHISTORY LATEST #sth * 50",
			"CHATHISTORY BETWEEN #sth timestamp=2000-01-01T00:00:00.000Z timestamp=2200-01-01T00:00:00.000Z 50",
			"CHATHISTORY AROUND #sth msgid=" + public + " 50",
		} {
			noSecret(name+" "+cmd, historyBatch(t, c, cmd, "#sth"))
		}
		for _, id := range statusIDs {
			// A status message's msgid is no reference into history: an empty page.
			if body := historyBatch(t, c, "CHATHISTORY AFTER #sth msgid="+id+" 50", "#sth"); len(texts(body)) != 0 {
				t.Fatalf("%s: AFTER a status msgid: %q", name, texts(body))
			}
		}
	}
	// The JOIN replay of a client without draft/chathistory.
	late, _ := guest(t, n, "shlate", "batch", "server-time", "message-tags")
	sendLines(t, late, "JOIN #sth")
	_, replay := batchBody(t, late, "chathistory")
	noSecret("join replay", replay)

	x := url.PathEscape("#sth")
	for _, path := range []string{
		"/api/v1/channels/" + x + "/history",
		"/api/v1/history/" + x,
		"/api/v1/search?channel=" + url.QueryEscape("#sth") + "&q=words",
		"/api/v1/channels/" + x + "/export",
	} {
		if got := restTexts(t, n, path); !slices.Equal(got, []string{"public words"}) {
			t.Fatalf("GET %s: %q", path, got)
		}
	}
	if got := restTexts(t, n, "/api/v1/search?channel="+url.QueryEscape("#sth")+"&q=secret"); len(got) != 0 {
		t.Fatalf("search finds a status message: %q", got)
	}
	for _, id := range statusIDs {
		for _, path := range []string{"/api/v1/messages/" + id, "/api/v1/verify/" + id} {
			resp, body := httpDo(t, "GET", "http://"+n.HTTPAddr()+path, "", nil)
			if resp.StatusCode != 404 || strings.Contains(string(body), "secret") {
				t.Fatalf("GET %s: %d %s, want 404", path, resp.StatusCode, body)
			}
		}
	}
}
