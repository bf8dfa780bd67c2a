package irc_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// TestIRCMultiline: draft/multiline is offered with its limits; a batch is one message (signed,
// stored, replayed), delivered as a batch to clients with the capability and as separate lines to
// the others; a batch over the limits is refused and delivers nothing.
func TestIRCMultiline(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	ml := []string{"draft/multiline", "batch", "echo-message", "server-time", "draft/chathistory"}
	alice, _ := login(t, n, "mlalice", ml...)
	bob, _ := guest(t, n, "mlbob", append([]string{"message-tags"}, ml...)...)
	carol, _ := guest(t, n, "mlcarol", "message-tags")
	joinChannels(t, alice, "#ml")
	joinChannels(t, bob, "#ml")
	joinChannels(t, carol, "#ml")

	t.Run("offered with its limits", func(t *testing.T) {
		c := dial(t, n)
		sendLines(t, c, "CAP LS 302")
		_, ls := expectCapLS(t, c)
		if !slices.Contains(ls, "draft/multiline=max-bytes=40000,max-lines=100") {
			t.Fatalf("CAP LS = %q", ls)
		}
	})

	// A 9.5 KB message in 100 lines, one of them continued without a newline.
	var body []string
	for i := 0; i < 99; i++ {
		body = append(body, fmt.Sprintf("%02d %s", i, strings.Repeat("x", 92)))
	}
	sendLines(t, alice, "BATCH +b1 draft/multiline #ml")
	for _, l := range body {
		sendLines(t, alice, "@batch=b1 PRIVMSG #ml :"+l)
	}
	sendLines(t, alice, "@batch=b1;draft/multiline-concat PRIVMSG #ml : and the end", "BATCH -b1")
	want := strings.Join(body, "\n") + " and the end"

	t.Run("a client with the capability gets one batch", func(t *testing.T) {
		start, lines := batchBody(t, bob, "draft/multiline")
		if start.Param(2) != "#ml" || start.Tags["msgid"] == "" || len(lines) != 99 {
			t.Fatalf("batch %q with %d lines", start.String(), len(lines))
		}
		if got := strings.Join(texts(lines), "\n"); got != want {
			t.Fatalf("assembled %d bytes, want %d", len(got), len(want))
		}
	})
	t.Run("the sender's echo is a batch too, signed", func(t *testing.T) {
		start, _ := batchBody(t, alice, "draft/multiline")
		if start.Tags["+freeq.at/sig"] == "" {
			t.Fatalf("echo %q is unsigned", start.String())
		}
		resp, data := httpDo(t, "GET", "http://"+n.HTTPAddr()+"/api/v1/verify/"+start.Tags["msgid"], "", nil)
		var v struct {
			Verdict string `json:"verdict"`
			Text    string `json:"text"`
		}
		if err := json.Unmarshal(data, &v); err != nil || resp.StatusCode != http.StatusOK || v.Verdict != "valid" || v.Text != want {
			t.Fatalf("verify = %d %.200s", resp.StatusCode, data)
		}
	})
	t.Run("a client without it gets one line each, the msgid on the first", func(t *testing.T) {
		first := expectFrom(t, carol, "mlalice", "PRIVMSG", "00 xxx")
		if first.Tags["msgid"] == "" {
			t.Fatalf("first line %q has no msgid", first.String())
		}
		last := expectFrom(t, carol, "mlalice", "PRIVMSG", "98 xxx")
		if last.Tags["msgid"] != "" || !strings.HasSuffix(last.Param(1), " and the end") {
			t.Fatalf("last line %q", last.String())
		}
	})
	t.Run("history replays one message", func(t *testing.T) {
		sendLines(t, bob, "CHATHISTORY LATEST #ml * 10")
		start := expect(t, bob, "BATCH", "chathistory")
		outer := strings.TrimPrefix(start.Param(0), "+")
		hist := readUntil(t, bob, "the end of the chathistory batch", func(m ircmsg.Message) bool {
			return m.Command == "BATCH" && m.Param(0) == "-"+outer
		})
		// BATCH +ml (in the chathistory batch), 99 lines, BATCH -ml, BATCH -chathistory.
		if len(hist) != 102 || hist[0].Command != "BATCH" || hist[0].Param(1) != "draft/multiline" || hist[0].Tags["batch"] != outer ||
			hist[100].Command != "BATCH" || !strings.HasPrefix(hist[100].Param(0), "-") {
			t.Fatalf("history: %d lines, first %q", len(hist), hist[0].String())
		}
	})
	t.Run("over the limits nothing is sent", func(t *testing.T) {
		sendLines(t, alice, "BATCH +b2 draft/multiline #ml")
		for i := 0; i < 110; i++ {
			sendLines(t, alice, "@batch=b2 PRIVMSG #ml :too many")
		}
		sendLines(t, alice, "BATCH -b2")
		msgs := drain(t, alice)
		if _, ok := findMsg(msgs, "FAIL", "BATCH", "MULTILINE_MAX_LINES"); !ok {
			t.Fatalf("no MULTILINE_MAX_LINES: %v", lines(msgs))
		}
		refuteMsg(t, msgs, "FAIL", "MULTILINE_INVALID")
		refuteMsg(t, msgs, "PRIVMSG", "too many")
		refuteMsg(t, drain(t, carol), "PRIVMSG", "too many")
	})
	t.Run("lines to another target break the batch", func(t *testing.T) {
		sendLines(t, alice, "BATCH +b3 draft/multiline #ml", "@batch=b3 PRIVMSG #other :x")
		expect(t, alice, "FAIL", "BATCH", "MULTILINE_INVALID_TARGET")
	})
}

// TestIRCMultilineLabeled: a label on the opening BATCH line labels the one response, the echo.
func TestIRCMultilineLabeled(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	c, _ := guest(t, n, "mllabel", "draft/multiline", "batch", "echo-message", "message-tags", "labeled-response")
	joinChannels(t, c, "#mllabel")
	sendLines(t, c, "@label=ml1 BATCH +x draft/multiline #mllabel", "@batch=x PRIVMSG #mllabel :a", "@batch=x PRIVMSG #mllabel :b", "BATCH -x")
	msgs := drain(t, c)
	labeled := 0
	for _, m := range msgs {
		if m.Tags["label"] == "ml1" {
			labeled++
			if m.Command != "BATCH" || m.Param(1) != "labeled-response" {
				t.Fatalf("labeled line %q", m.String())
			}
		}
	}
	if labeled != 1 {
		t.Fatalf("%d labeled responses: %v", labeled, lines(msgs))
	}
	if _, ok := findMsg(msgs, "BATCH", "draft/multiline", "#mllabel"); !ok {
		t.Fatalf("no multiline echo: %v", lines(msgs))
	}
}
