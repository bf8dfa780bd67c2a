package irc_test

import (
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// labeledReply reads the response to the command sent with label: the labeled line itself, or the
// lines inside the labeled-response batch it opens.
func labeledReply(t *testing.T, c *ircclient.Client, label string) (first ircmsg.Message, body []ircmsg.Message) {
	t.Helper()
	first, err := c.Expect(testCtx(t), func(m ircmsg.Message) bool { return m.Tags["label"] == label })
	if err != nil {
		t.Fatalf("waiting for label %s: %v\nseen: %v", label, err, lastSeen(c))
	}
	if first.Command == "BATCH" {
		if first.Param(1) != "labeled-response" || !strings.HasPrefix(first.Param(0), "+") {
			t.Fatalf("labeled batch start %q", first.String())
		}
		body = batchRest(t, c, first)
	}
	return first, body
}

func TestIRCLabeledResponse(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	c, _ := guest(t, n, "labeler", "labeled-response", "batch", "message-tags", "echo-message")
	peer, _ := guest(t, n, "labelpeer")

	t.Run("one reply carries the label", func(t *testing.T) {
		sendLines(t, c, "@label=one PING tok")
		m, body := labeledReply(t, c, "one")
		if m.Command != "PONG" || m.Param(1) != "tok" || body != nil {
			t.Fatalf("reply %q", m.String())
		}
	})

	t.Run("several replies come in a labeled-response batch", func(t *testing.T) {
		sendLines(t, c, "@label=many WHOIS labelpeer")
		start, body := labeledReply(t, c, "many")
		if start.Command != "BATCH" {
			t.Fatalf("reply %q, want a BATCH", start.String())
		}
		got := strings.Join(commandsOf(body), " ")
		if !strings.HasPrefix(got, "311") || !strings.HasSuffix(got, "318") {
			t.Fatalf("batch holds %q, want the WHOIS replies", got)
		}
		for _, m := range body {
			if _, ok := m.Tags["label"]; ok {
				t.Fatalf("label repeated inside the batch: %q", m.String())
			}
		}
	})

	t.Run("no reply gets an ACK", func(t *testing.T) {
		sendLines(t, c, "@label=quiet PONG whatever")
		m, _ := labeledReply(t, c, "quiet")
		if m.Command != "ACK" || len(m.Params) != 0 || m.Source != "palaver.test" {
			t.Fatalf("reply %q, want ACK", m.String())
		}
	})

	t.Run("a labeled JOIN puts its echo inside the batch", func(t *testing.T) {
		sendLines(t, c, "@label=joining JOIN #labeled")
		start, body := labeledReply(t, c, "joining")
		if start.Command != "BATCH" {
			t.Fatalf("reply %q, want a BATCH", start.String())
		}
		got := commandsOf(body)
		if len(got) < 3 || got[0] != "JOIN" || body[0].Param(0) != "#labeled" || got[len(got)-1] != "366" {
			t.Fatalf("batch holds %q, want JOIN ... 366", got)
		}
		// Nothing about the JOIN arrives outside the batch.
		refuteMsg(t, drain(t, c), "JOIN")
	})

	t.Run("a labeled JOIN nests the history batch", func(t *testing.T) {
		h, _ := guest(t, n, "historian", "message-tags")
		joinChannels(t, h, "#nested")
		sendLines(t, h, "PRIVMSG #nested :old news")
		syncClient(t, h)
		sendLines(t, c, "@label=nest JOIN #nested")
		start, err := c.Expect(testCtx(t), func(m ircmsg.Message) bool { return m.Tags["label"] == "nest" })
		if err != nil || start.Command != "BATCH" {
			t.Fatalf("reply %q (%v), want a BATCH", start.String(), err)
		}
		outer := strings.TrimPrefix(start.Param(0), "+")
		inner := ""
		var history []string
		for {
			m, err := c.ReadMessage(testCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			if m.Command == "BATCH" && m.Param(0) == "-"+outer {
				break
			}
			switch {
			case m.Command == "BATCH" && strings.HasPrefix(m.Param(0), "+"):
				if m.Tags["batch"] != outer || m.Param(1) != "chathistory" {
					t.Fatalf("nested batch start %q", m.String())
				}
				inner = strings.TrimPrefix(m.Param(0), "+")
			case m.Command == "BATCH":
				if m.Param(0) != "-"+inner || m.Tags["batch"] != outer {
					t.Fatalf("nested batch end %q", m.String())
				}
			case inner != "" && m.Command == "PRIVMSG":
				if m.Tags["batch"] != inner {
					t.Fatalf("history line %q outside its batch", m.String())
				}
				history = append(history, m.Param(1))
			default:
				if m.Tags["batch"] != outer {
					t.Fatalf("reply %q outside the labeled batch", m.String())
				}
			}
		}
		if strings.Join(history, ",") != "old news" {
			t.Fatalf("replayed %q", history)
		}
	})

	t.Run("a labeled PRIVMSG's echo carries the label", func(t *testing.T) {
		joinChannels(t, peer, "#labeled")
		sendLines(t, c, "@label=say PRIVMSG #labeled :labeled words")
		m, _ := labeledReply(t, c, "say")
		if m.Command != "PRIVMSG" || m.Param(1) != "labeled words" || m.Tags["msgid"] == "" {
			t.Fatalf("echo %q", m.String())
		}
		p := expectFrom(t, peer, "labeler", "PRIVMSG", "labeled words")
		if len(p.Tags) != 0 {
			t.Fatalf("the label leaked to a peer: %q", p.String())
		}
	})

	t.Run("a labeled PRIVMSG without echo-message gets an ACK", func(t *testing.T) {
		quiet, _ := guest(t, n, "quietlabeler", "labeled-response", "batch", "message-tags")
		joinChannels(t, quiet, "#labeled")
		sendLines(t, quiet, "@label=q PRIVMSG #labeled :no echo")
		m, _ := labeledReply(t, quiet, "q")
		if m.Command != "ACK" {
			t.Fatalf("reply %q, want ACK", m.String())
		}
		expectFrom(t, peer, "quietlabeler", "PRIVMSG", "no echo")
	})

	t.Run("a client without labeled-response gets no label", func(t *testing.T) {
		other, _ := guest(t, n, "nolabels", "message-tags")
		sendLines(t, other, "@label=ignored PING x")
		m := expect(t, other, "PONG", "x")
		if _, ok := m.Tags["label"]; ok {
			t.Fatalf("label echoed without the cap: %q", m.String())
		}
	})
}

// TestIRCLabeledMessageToOneself: with echo-message, a PRIVMSG, NOTICE or TAGMSG to oneself comes
// back twice, the echo labeled and the delivery not; without echo-message, once.
func TestIRCLabeledMessageToOneself(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	echoer, _ := guest(t, n, "selfecho", "labeled-response", "batch", "message-tags", "echo-message")
	plain, _ := guest(t, n, "selfplain")
	for _, cmd := range []string{"PRIVMSG", "NOTICE", "TAGMSG"} {
		t.Run(cmd, func(t *testing.T) {
			line := "@label=self-" + cmd + ";+x=y " + cmd + " selfecho"
			if cmd != "TAGMSG" {
				line += " :to me"
			}
			sendLines(t, echoer, line)
			msgs := drain(t, echoer)
			var labeled, unlabeled int
			for _, m := range msgs {
				if m.Command != cmd || m.Param(0) != "selfecho" {
					continue
				}
				if m.Tags["label"] == "self-"+cmd {
					labeled++
				} else {
					unlabeled++
				}
			}
			if labeled != 1 || unlabeled != 1 {
				t.Fatalf("%d labeled and %d unlabeled copies: %v", labeled, unlabeled, lines(msgs))
			}
		})
	}
	t.Run("without echo-message", func(t *testing.T) {
		sendLines(t, plain, "PRIVMSG selfplain :to me")
		expectFrom(t, plain, "selfplain", "PRIVMSG", "selfplain", "to me")
	})
}
