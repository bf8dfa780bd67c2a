package irctest

import (
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// lastSeenLines is how many of the last lines a client read a failure shows.
const lastSeenLines = 15

// Guest connects over TCP and registers nick without logging in, requesting caps; it returns
// the welcome (001).
func Guest(tb testing.TB, n Node, nick string, caps ...string) (*ircclient.Client, ircmsg.Message) {
	tb.Helper()
	c := Dial(tb, n)
	w, err := c.Register(Ctx(tb), nick, caps...)
	if err != nil {
		tb.Fatalf("register %s: %v", nick, err)
	}
	return c, w
}

// SendLines sends each line in order.
func SendLines(tb testing.TB, c *ircclient.Client, lines ...string) {
	tb.Helper()
	for _, l := range lines {
		if err := c.Send(l); err != nil {
			tb.Fatalf("send %q: %v", l, err)
		}
	}
}

// ExpectMatch waits for a line that match accepts; what names it in the failure.
func ExpectMatch(tb testing.TB, c *ircclient.Client, what string, match func(ircmsg.Message) bool) ircmsg.Message {
	tb.Helper()
	m, err := c.Expect(Ctx(tb), match)
	if err != nil {
		tb.Fatalf("waiting for %s: %v\nseen: %v", what, err, LastSeen(c))
	}
	return m
}

// Expect waits for a line with the command whose parameters contain every want string.
func Expect(tb testing.TB, c *ircclient.Client, command string, want ...string) ircmsg.Message {
	tb.Helper()
	return ExpectMatch(tb, c, command+" "+strings.Join(want, " "), func(m ircmsg.Message) bool {
		return m.Command == command && ParamsContain(m, want...)
	})
}

// ExpectFrom waits for a line with command from nick whose parameters contain every want string.
func ExpectFrom(tb testing.TB, c *ircclient.Client, nick, command string, want ...string) ircmsg.Message {
	tb.Helper()
	return ExpectMatch(tb, c, command+" from "+nick+" "+strings.Join(want, " "), func(m ircmsg.Message) bool {
		return m.Command == command && IsFrom(m, nick) && ParamsContain(m, want...)
	})
}

// ExpectParams waits for a line with command whose parameters equal want exactly.
func ExpectParams(tb testing.TB, c *ircclient.Client, command string, want ...string) ircmsg.Message {
	tb.Helper()
	return ExpectMatch(tb, c, command+" "+strings.Join(want, " "), func(m ircmsg.Message) bool {
		return m.Command == command && strings.Join(m.Params, "\x00") == strings.Join(want, "\x00")
	})
}

// ExpectEndOfNames waits for the end of NAMES (366) of channel.
func ExpectEndOfNames(tb testing.TB, c *ircclient.Client, channel string) {
	tb.Helper()
	folded := fsm.Fold(channel)
	ExpectMatch(tb, c, "366 "+channel, func(m ircmsg.Message) bool {
		return m.Command == "366" && m.Param(1) == folded
	})
}

// ExpectCapLS reads a CAP LS reply to its last line (a 302 reply may continue over lines marked
// "*") and returns the first line and every capability offered.
func ExpectCapLS(tb testing.TB, c *ircclient.Client) (first ircmsg.Message, caps []string) {
	tb.Helper()
	for i := 0; ; i++ {
		m := Expect(tb, c, "CAP", "LS")
		if i == 0 {
			first = m
		}
		caps = append(caps, strings.Fields(m.Param(len(m.Params)-1))...)
		if m.Param(2) != "*" {
			return first, caps
		}
	}
}

// ReadUntil reads until match holds and returns every message read, the match last.
func ReadUntil(tb testing.TB, c *ircclient.Client, what string, match func(ircmsg.Message) bool) []ircmsg.Message {
	tb.Helper()
	var out []ircmsg.Message
	ExpectMatch(tb, c, what, func(m ircmsg.Message) bool {
		out = append(out, m)
		return match(m)
	})
	return out
}

// Drain sends a PING with a fresh token and returns everything received before its PONG:
// whatever the server queued for c before the PING was processed is in the result.
func Drain(tb testing.TB, c *ircclient.Client) []ircmsg.Message {
	tb.Helper()
	tok := token("drain-")
	SendLines(tb, c, "PING "+tok)
	msgs := ReadUntil(tb, c, "PONG "+tok, func(m ircmsg.Message) bool {
		return m.Command == "PONG" && m.Param(1) == tok
	})
	return msgs[:len(msgs)-1]
}

// Sync sends a PING with a fresh token and waits for its PONG: everything the server queued for
// c before it is then read.
func Sync(tb testing.TB, c *ircclient.Client) {
	tb.Helper()
	tok := token("sync-")
	SendLines(tb, c, "PING "+tok)
	Expect(tb, c, "PONG", tok)
}

// JoinChannels joins the channels and waits for the end of NAMES of each.
func JoinChannels(tb testing.TB, c *ircclient.Client, channels ...string) {
	tb.Helper()
	SendLines(tb, c, "JOIN "+strings.Join(channels, ","))
	for _, ch := range channels {
		ExpectEndOfNames(tb, c, ch)
	}
}

// ChanOp creates channel with c as its operator and applies the mode lines, reading every reply.
func ChanOp(tb testing.TB, c *ircclient.Client, channel string, modes ...string) {
	tb.Helper()
	JoinChannels(tb, c, channel)
	for _, m := range modes {
		SendLines(tb, c, "MODE "+channel+" "+m)
	}
	Sync(tb, c)
}

// BatchBody reads a BATCH +id of typ (the first one to arrive) and returns its start line and the
// lines tagged with its id, up to BATCH -id.
func BatchBody(tb testing.TB, c *ircclient.Client, typ string) (ircmsg.Message, []ircmsg.Message) {
	tb.Helper()
	start := ExpectMatch(tb, c, "a "+typ+" batch", func(m ircmsg.Message) bool {
		return m.Command == "BATCH" && strings.HasPrefix(m.Param(0), "+") && m.Param(1) == typ
	})
	return start, BatchRest(tb, c, start)
}

// BatchRest reads the body of the batch opened by start; a line inside it without its tag fails.
func BatchRest(tb testing.TB, c *ircclient.Client, start ircmsg.Message) []ircmsg.Message {
	tb.Helper()
	id := strings.TrimPrefix(start.Param(0), "+")
	var body []ircmsg.Message
	for {
		m, err := c.ReadMessage(Ctx(tb))
		if err != nil {
			tb.Fatalf("reading batch %s: %v\nseen: %v", id, err, LastSeen(c))
		}
		if m.Command == "BATCH" && m.Param(0) == "-"+id {
			return body
		}
		if m.Tags["batch"] != id {
			tb.Fatalf("line inside batch %s without its tag: %s", id, m.String())
		}
		body = append(body, m)
	}
}

// ExpectSeen finds an already-read line by command.
func ExpectSeen(tb testing.TB, c *ircclient.Client, command string) ircmsg.Message {
	tb.Helper()
	return ExpectSeenParams(tb, c, command)
}

// ExpectSeenParams finds an already-read line by command whose parameters contain every want
// string.
func ExpectSeenParams(tb testing.TB, c *ircclient.Client, command string, want ...string) ircmsg.Message {
	tb.Helper()
	m, ok := FindMsg(c.Seen(), command, want...)
	if !ok {
		tb.Fatalf("no %s %v seen: %v", command, want, LastSeen(c))
	}
	return m
}

// RefuteMsg fails when msgs hold a line with command whose parameters contain every want string.
func RefuteMsg(tb testing.TB, msgs []ircmsg.Message, command string, want ...string) {
	tb.Helper()
	if m, ok := FindMsg(msgs, command, want...); ok {
		tb.Fatalf("unexpected %s", m.String())
	}
}

// LastSeen renders the last lines c read, for failure output.
func LastSeen(c *ircclient.Client) []string {
	seen := c.Seen()
	if len(seen) > lastSeenLines {
		seen = seen[len(seen)-lastSeenLines:]
	}
	return Lines(seen)
}
