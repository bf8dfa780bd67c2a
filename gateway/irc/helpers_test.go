package irc_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// Helpers for the black-box IRC protocol tests (irc_*_test.go). They build on harness_test.go.

// sendLines sends each line in order.
func sendLines(t *testing.T, c *ircclient.Client, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if err := c.Send(l); err != nil {
			t.Fatalf("send %q: %v", l, err)
		}
	}
}

// readUntil reads until match holds and returns every message read, the match last.
func readUntil(t *testing.T, c *ircclient.Client, what string, match func(ircmsg.Message) bool) []ircmsg.Message {
	t.Helper()
	var out []ircmsg.Message
	_, err := c.Expect(testCtx(t), func(m ircmsg.Message) bool {
		out = append(out, m)
		return match(m)
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v\nseen: %v", what, err, lastSeen(c))
	}
	return out
}

// drain sends a PING with a fresh token and returns everything received before its PONG. Whatever
// the server queued for c before the PING was processed is in the result.
func drain(t *testing.T, c *ircclient.Client) []ircmsg.Message {
	t.Helper()
	token := "drain-" + base64.RawURLEncoding.EncodeToString(randomBytes(6))
	sendLines(t, c, "PING "+token)
	msgs := readUntil(t, c, "PONG "+token, func(m ircmsg.Message) bool {
		return m.Command == "PONG" && m.Param(1) == token
	})
	return msgs[:len(msgs)-1]
}

// isFrom reports whether m's source is nick (nick!user@host or a bare nick).
func isFrom(m ircmsg.Message, nick string) bool {
	src, _, _ := strings.Cut(m.Source, "!")
	return strings.EqualFold(src, nick)
}

// expectFrom waits for a line with command from nick whose parameters contain every want string.
func expectFrom(t *testing.T, c *ircclient.Client, nick, command string, want ...string) ircmsg.Message {
	t.Helper()
	m, err := c.Expect(testCtx(t), func(m ircmsg.Message) bool {
		return m.Command == command && isFrom(m, nick) && paramsContain(m, want...)
	})
	if err != nil {
		t.Fatalf("waiting for %s from %s %v: %v\nseen: %v", command, nick, want, err, lastSeen(c))
	}
	return m
}

// expectParams waits for a line with command whose parameters equal want exactly.
func expectParams(t *testing.T, c *ircclient.Client, command string, want ...string) ircmsg.Message {
	t.Helper()
	m, err := c.Expect(testCtx(t), func(m ircmsg.Message) bool {
		return m.Command == command && strings.Join(m.Params, "\x00") == strings.Join(want, "\x00")
	})
	if err != nil {
		t.Fatalf("waiting for %s %q: %v\nseen: %v", command, want, err, lastSeen(c))
	}
	return m
}

func paramsContain(m ircmsg.Message, want ...string) bool {
	joined := strings.Join(m.Params, " ")
	for _, w := range want {
		if !strings.Contains(joined, w) {
			return false
		}
	}
	return true
}

// findMsg returns the first message with command whose parameters contain every want string.
func findMsg(msgs []ircmsg.Message, command string, want ...string) (ircmsg.Message, bool) {
	for _, m := range msgs {
		if m.Command == command && paramsContain(m, want...) {
			return m, true
		}
	}
	return ircmsg.Message{}, false
}

// refuteMsg fails when msgs hold a line with command whose parameters contain every want string.
func refuteMsg(t *testing.T, msgs []ircmsg.Message, command string, want ...string) {
	t.Helper()
	if m, ok := findMsg(msgs, command, want...); ok {
		t.Fatalf("unexpected %s", m.String())
	}
}

func commandsOf(msgs []ircmsg.Message) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, m.Command)
	}
	return out
}

// joinChannels joins the channels and waits for the end of NAMES of each.
func joinChannels(t *testing.T, c *ircclient.Client, channels ...string) {
	t.Helper()
	sendLines(t, c, "JOIN "+strings.Join(channels, ","))
	for _, ch := range channels {
		expectEndOfNames(t, c, ch)
	}
}

// expectEndOfNames waits for the end of NAMES of channel (its folded name).
func expectEndOfNames(t *testing.T, c *ircclient.Client, channel string) {
	t.Helper()
	folded := fsm.Fold(channel)
	if _, err := c.Expect(testCtx(t), func(m ircmsg.Message) bool {
		return m.Command == "366" && m.Param(1) == folded
	}); err != nil {
		t.Fatalf("waiting for 366 %s: %v\nseen: %v", channel, err, lastSeen(c))
	}
}

// chanOp creates channel with c as its operator and applies the mode lines, waiting for each MODE.
func chanOp(t *testing.T, c *ircclient.Client, channel string, modes ...string) {
	t.Helper()
	joinChannels(t, c, channel)
	for _, m := range modes {
		sendLines(t, c, "MODE "+channel+" "+m)
	}
	syncClient(t, c)
}

// batchBody reads a BATCH +id of typ (the first one to arrive) and returns its start line and the
// lines tagged with its id, up to BATCH -id.
func batchBody(t *testing.T, c *ircclient.Client, typ string) (ircmsg.Message, []ircmsg.Message) {
	t.Helper()
	start, err := c.Expect(testCtx(t), func(m ircmsg.Message) bool {
		return m.Command == "BATCH" && strings.HasPrefix(m.Param(0), "+") && m.Param(1) == typ
	})
	if err != nil {
		t.Fatalf("waiting for a %s batch: %v\nseen: %v", typ, err, lastSeen(c))
	}
	return start, batchRest(t, c, start)
}

// batchRest reads the body of the batch opened by start.
func batchRest(t *testing.T, c *ircclient.Client, start ircmsg.Message) []ircmsg.Message {
	t.Helper()
	id := strings.TrimPrefix(start.Param(0), "+")
	var body []ircmsg.Message
	for {
		m, err := c.ReadMessage(testCtx(t))
		if err != nil {
			t.Fatalf("reading batch %s: %v\nseen: %v", id, err, lastSeen(c))
		}
		if m.Command == "BATCH" && m.Param(0) == "-"+id {
			return body
		}
		if m.Tags["batch"] != id {
			t.Fatalf("line inside batch %s without its tag: %s", id, m.String())
		}
		body = append(body, m)
	}
}

// texts returns the last parameter of each PRIVMSG/NOTICE.
func texts(msgs []ircmsg.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Command == "PRIVMSG" || m.Command == "NOTICE" {
			out = append(out, m.Param(len(m.Params)-1))
		}
	}
	return out
}

// sessionGone waits until no session uses nick in the replicated state.
func sessionGone(t *testing.T, n *Node, nick string) {
	t.Helper()
	eventually(t, "the session of "+nick+" to end", func() bool {
		gone := true
		n.Machine().Read(func(st *fsm.State) { gone = st.SessionByNick(nick) == nil })
		return gone
	})
}

// quit sends QUIT and waits for the server to close the session.
func quit(t *testing.T, n *Node, c *ircclient.Client, nick string) {
	t.Helper()
	sendLines(t, c, "QUIT :done")
	expect(t, c, "ERROR")
	sessionGone(t, n, nick)
}

// expectSeenParams finds an already-read line by command whose parameters contain every want string.
func expectSeenParams(t *testing.T, c *ircclient.Client, command string, want ...string) ircmsg.Message {
	t.Helper()
	if m, ok := findMsg(c.Seen(), command, want...); ok {
		return m
	}
	t.Fatalf("no %s %v seen: %v", command, want, lastSeen(c))
	return ircmsg.Message{}
}

// lines renders messages for failure output.
func lines(msgs []ircmsg.Message) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, m.String())
	}
	return out
}
