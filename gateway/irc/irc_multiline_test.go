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

	t.Run("a client with the capability gets one batch, as composed", func(t *testing.T) {
		start, lines := batchBody(t, bob, "draft/multiline")
		if start.Param(2) != "#ml" || start.Tags["msgid"] == "" || len(lines) != 100 {
			t.Fatalf("batch %q with %d lines", start.String(), len(lines))
		}
		if got := assemble(lines); got != want {
			t.Fatalf("assembled %d bytes, want %d", len(got), len(want))
		}
		if _, ok := lines[99].Tags["draft/multiline-concat"]; !ok || lines[99].Param(1) != " and the end" {
			t.Fatalf("last line %q, want the sender's concat line", lines[99].String())
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
		expectFrom(t, carol, "mlalice", "PRIVMSG", "98 xxx")
		last := expectFrom(t, carol, "mlalice", "PRIVMSG")
		if last.Tags["msgid"] != "" || last.Param(1) != " and the end" {
			t.Fatalf("last line %q, want the sender's concat line alone", last.String())
		}
	})
	t.Run("history replays one message", func(t *testing.T) {
		sendLines(t, bob, "CHATHISTORY LATEST #ml * 10")
		start := expect(t, bob, "BATCH", "chathistory")
		outer := strings.TrimPrefix(start.Param(0), "+")
		hist := readUntil(t, bob, "the end of the chathistory batch", func(m ircmsg.Message) bool {
			return m.Command == "BATCH" && m.Param(0) == "-"+outer
		})
		// BATCH +ml (in the chathistory batch), 100 lines, BATCH -ml, BATCH -chathistory.
		if len(hist) != 103 || hist[0].Command != "BATCH" || hist[0].Param(1) != "draft/multiline" || hist[0].Tags["batch"] != outer ||
			hist[101].Command != "BATCH" || !strings.HasPrefix(hist[101].Param(0), "-") {
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
		if m, ok := findMsg(msgs, "FAIL", "BATCH", "MULTILINE_MAX_LINES"); !ok || len(m.Params) != 4 || m.Param(2) != "100" {
			t.Fatalf("no FAIL BATCH MULTILINE_MAX_LINES 100 :text: %v", lines(msgs))
		}
		refuteMsg(t, msgs, "FAIL", "MULTILINE_INVALID")
		refuteMsg(t, msgs, "PRIVMSG", "too many")
		refuteMsg(t, drain(t, carol), "PRIVMSG", "too many")
	})
	t.Run("lines to another target break the batch", func(t *testing.T) {
		sendLines(t, alice, "BATCH +b3 draft/multiline #ml", "@batch=b3 PRIVMSG #other :x")
		// MULTILINE_INVALID_TARGET <batch-target> <provided-target>
		m := expect(t, alice, "FAIL", "BATCH", "MULTILINE_INVALID_TARGET")
		if len(m.Params) != 5 || m.Param(2) != "#ml" || m.Param(3) != "#other" {
			t.Fatalf("FAIL %q", m.String())
		}
	})
	t.Run("MULTILINE_INVALID has no parameters but its text", func(t *testing.T) {
		sendLines(t, alice, "BATCH +b4 draft/multiline #ml", "@batch=b4 PRIVMSG #ml :hi",
			"@batch=b4;draft/multiline-concat PRIVMSG #ml :", "BATCH -b4")
		m := expect(t, alice, "FAIL", "BATCH", "MULTILINE_INVALID")
		if len(m.Params) != 3 {
			t.Fatalf("FAIL %q", m.String())
		}
		sendLines(t, alice, "BATCH +b5 draft/multiline #ml", "@batch=b5 PRIVMSG #ml :", "@batch=b5 PRIVMSG #ml :", "BATCH -b5")
		if m := expect(t, alice, "FAIL", "BATCH", "MULTILINE_INVALID"); len(m.Params) != 3 {
			t.Fatalf("FAIL %q", m.String())
		}
		refuteMsg(t, drain(t, carol), "PRIVMSG")
	})
}

// assemble joins a multiline batch's lines into its message: a newline between lines, nothing
// before a draft/multiline-concat line.
func assemble(lines []ircmsg.Message) string {
	var b strings.Builder
	for i, m := range lines {
		if _, concat := m.Tags["draft/multiline-concat"]; i > 0 && !concat {
			b.WriteByte('\n')
		}
		b.WriteString(m.Param(1))
	}
	return b.String()
}

// TestIRCMultilineFallback follows draft/multiline's fallback: a client without the capability
// gets the lines as the sender composed them (its concat lines as lines of their own), never a
// blank line, live or in CHATHISTORY, the msgid on the first line it gets and the client-only
// tags on every line; and no line over the 512-byte limit, even where the sender's lines,
// concatenated, make one line of 1,500 bytes.
func TestIRCMultilineFallback(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	alice, _ := guest(t, n, "fballice", "draft/multiline", "batch", "echo-message", "message-tags", "server-time")
	bob, _ := guest(t, n, "fbbob", "draft/multiline", "batch", "message-tags")
	carol, _ := guest(t, n, "fbcarol", "message-tags", "batch", "server-time", "draft/chathistory")
	joinChannels(t, alice, "#fb")
	joinChannels(t, bob, "#fb")
	joinChannels(t, carol, "#fb")

	t.Run("blank lines and concat lines", func(t *testing.T) {
		sendLines(t, alice, "@+client-only-tag=x BATCH +a draft/multiline #fb", "@batch=a PRIVMSG #fb :",
			"@batch=a PRIVMSG #fb :#how is ", "@batch=a;draft/multiline-concat PRIVMSG #fb :everyone?", "BATCH -a")
		start, batch := batchBody(t, bob, "draft/multiline")
		if got := texts(batch); !slices.Equal(got, []string{"", "#how is ", "everyone?"}) {
			t.Fatalf("batch lines %q", got)
		}
		msgid := start.Tags["msgid"]
		syncClient(t, alice) // the echo follows the delivery to every member
		got := drain(t, carol)
		if len(got) != 2 || got[0].Param(1) != "#how is " || got[1].Param(1) != "everyone?" {
			t.Fatalf("fallback %v", lines(got))
		}
		if got[0].Tags["msgid"] != msgid || got[1].Tags["msgid"] != "" {
			t.Fatalf("fallback msgids %v, want %s on the first line only", lines(got), msgid)
		}
		for _, m := range got {
			if m.Tags["+client-only-tag"] != "x" {
				t.Fatalf("fallback line without the client-only tag: %s", m.String())
			}
			if _, ok := m.Tags["draft/multiline-concat"]; ok {
				t.Fatalf("fallback line with the concat tag: %s", m.String())
			}
		}
		hist := historyBatch(t, carol, "CHATHISTORY LATEST #fb * 1", "#fb")
		if got := texts(hist); !slices.Equal(got, []string{"#how is ", "everyone?"}) {
			t.Fatalf("history without the capability: %q", got)
		}
	})
	t.Run("long concat lines", func(t *testing.T) {
		sendLines(t, alice, "BATCH +b draft/multiline #fb")
		var want strings.Builder
		for i := 0; i < 3; i++ {
			part := fmt.Sprintf("%d %s ", i, strings.Repeat("y", 496))
			want.WriteString(part)
			tag := "@batch=b"
			if i > 0 {
				tag += ";draft/multiline-concat"
			}
			sendLines(t, alice, tag+" PRIVMSG #fb :"+part)
		}
		sendLines(t, alice, "BATCH -b")
		_, batch := batchBody(t, bob, "draft/multiline")
		if got := assemble(batch); got != want.String() {
			t.Fatalf("assembled %d bytes, want %d", len(got), want.Len())
		}
		syncClient(t, alice) // the echo follows the delivery to every member
		got := drain(t, carol)
		if len(got) < 3 {
			t.Fatalf("fallback %d lines, want the three lines or more", len(got))
		}
		var text strings.Builder
		for _, m := range got {
			m.Tags = nil
			if wire := len(m.AppendTo(nil)); wire > 512 {
				t.Fatalf("fallback line of %d bytes: %.80s…", wire, m.String())
			}
			text.WriteString(m.Param(1))
		}
		if text.String() != want.String() {
			t.Fatalf("fallback lines hold %d bytes, want %d", text.Len(), want.Len())
		}
	})
}

// TestIRCMultilineLabeled: a label on the opening BATCH line labels the one response, the echo,
// on its opening BATCH line, not on a labeled-response batch around it.
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
			// draft/multiline: the label only on the opening BATCH of the echo.
			if m.Command != "BATCH" || m.Param(1) != "draft/multiline" || m.Param(2) != "#mllabel" {
				t.Fatalf("labeled line %q", m.String())
			}
		}
	}
	if labeled != 1 {
		t.Fatalf("%d labeled responses: %v", labeled, lines(msgs))
	}
	refuteMsg(t, msgs, "BATCH", "labeled-response")
}

// TestIRCMultilineCompositionAcrossNodes: the sender's concat lines reach a client on another node
// as composed, and its history there too.
func TestIRCMultilineCompositionAcrossNodes(t *testing.T) {
	nodes := startCluster(t)
	caps := []string{"draft/multiline", "batch", "message-tags", "draft/chathistory", "server-time"}
	x, _ := guest(t, nodes[0], "mlcompx", caps...)
	y, _ := guest(t, nodes[2], "mlcompy", caps...)
	joinChannels(t, x, "#mlcomp")
	joinChannels(t, y, "#mlcomp")
	sendLines(t, x, "BATCH +c draft/multiline #mlcomp", "@batch=c PRIVMSG #mlcomp :how is ",
		"@batch=c;draft/multiline-concat PRIVMSG #mlcomp :everyone?", "@batch=c PRIVMSG #mlcomp :fine", "BATCH -c")
	for _, batch := range [][]ircmsg.Message{
		func() []ircmsg.Message { _, b := batchBody(t, y, "draft/multiline"); return b }(),
		func() []ircmsg.Message {
			sendLines(t, y, "CHATHISTORY LATEST #mlcomp * 1")
			_, b := batchBody(t, y, "draft/multiline")
			return b
		}(),
	} {
		if got := texts(batch); !slices.Equal(got, []string{"how is ", "everyone?", "fine"}) {
			t.Fatalf("lines %q", got)
		}
		if _, ok := batch[1].Tags["draft/multiline-concat"]; !ok {
			t.Fatalf("second line %q without the concat tag", batch[1].String())
		}
	}
}
