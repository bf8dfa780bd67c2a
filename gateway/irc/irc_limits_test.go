package irc_test

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

func TestIRCLineLength(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	c, _ := guest(t, n, "longliner")
	// "AWAY :" + text: the reply is short whatever the text is (AWAY keeps 300 bytes).
	const maxLine = 8192 // including CRLF
	fits := "AWAY :" + strings.Repeat("a", maxLine-2-len("AWAY :"))
	tooLong := fits + "a"
	sendLines(t, c, tooLong)
	expectParams(t, c, "417", "longliner", "Input line was too long")
	sendLines(t, c, fits)
	expect(t, c, "306")
	// A line far over the limit is dropped too, and the connection goes on.
	sendLines(t, c, "PRIVMSG longliner :"+strings.Repeat("x", 100_000)+" QUIT")
	expect(t, c, "417")
	syncClient(t, c)
	sendLines(t, c, "WHOIS longliner")
	expect(t, c, "318")
}

func TestIRCFloodLimits(t *testing.T) {
	n := startNode(t, t.TempDir(), func(c *Config) { c.NoFloodLimits = false })
	sender, _ := guest(t, n, "flooder")
	peer, _ := guest(t, n, "floodpeer")
	joinChannels(t, sender, "#flood")
	joinChannels(t, peer, "#flood")

	t.Run("messages", func(t *testing.T) {
		const burst = 30
		for i := 0; i < burst; i++ {
			sendLines(t, sender, fmt.Sprintf("PRIVMSG #flood :burst %02d", i))
		}
		msgs := drain(t, sender)
		refused, ok := findMsg(msgs, "404", "#flood")
		if !ok || !strings.Contains(refused.Param(2), "Flood protection") {
			t.Fatalf("no 404 flood refusal after %d messages: %q", burst, commandsOf(msgs))
		}
		got := texts(drain(t, peer))
		if len(got) < 5 || len(got) >= burst {
			t.Fatalf("peer got %d of %d burst messages, want the first 5 or a few more", len(got), burst)
		}
		for i, text := range got {
			if text != fmt.Sprintf("burst %02d", i) {
				t.Fatalf("peer got %q, want the burst in order", got)
			}
		}
	})

	// A client such as freeq's web app sends typing notices around each line: they have a bucket of
	// their own and leave the lines' budget whole.
	t.Run("typing notices spend no message budget", func(t *testing.T) {
		typer, _ := guest(t, n, "typer", "message-tags")
		reader, _ := guest(t, n, "typereader", "message-tags")
		joinChannels(t, typer, "#typing")
		joinChannels(t, reader, "#typing")
		for i := 0; i < 5; i++ {
			sendLines(t, typer, "@+typing=active TAGMSG #typing", fmt.Sprintf("PRIVMSG #typing :line %d", i), "@+typing=done TAGMSG #typing")
		}
		msgs := drain(t, typer)
		if m, ok := findMsg(msgs, "404", "#typing"); ok {
			t.Fatalf("five lines with their typing notices were refused: %q", m.String())
		}
		if m, ok := findMsg(msgs, "FAIL", "TAGMSG"); ok {
			t.Fatalf("ten typing notices were refused: %q", m.String())
		}
		if got := texts(drain(t, reader)); len(got) != 5 {
			t.Fatalf("reader got %q, want the five lines", got)
		}
	})

	t.Run("TAGMSG", func(t *testing.T) {
		tagger, _ := guest(t, n, "tagger", "message-tags")
		joinChannels(t, tagger, "#tags")
		for i := 0; i < 40; i++ {
			sendLines(t, tagger, "@+typing=active TAGMSG #tags")
		}
		refused, ok := findMsg(drain(t, tagger), "FAIL", "TAGMSG")
		if !ok || refused.Param(1) != "RATE_LIMITED" {
			t.Fatalf("no FAIL TAGMSG RATE_LIMITED after 40 TAGMSGs")
		}
	})

	t.Run("commands", func(t *testing.T) {
		for i := 0; i < 40; i++ {
			sendLines(t, sender, "TIME")
		}
		msgs := drain(t, sender)
		if _, ok := findMsg(msgs, "NOTICE", "Flood protection"); !ok {
			t.Fatalf("no flood NOTICE after 40 commands: %q", commandsOf(msgs))
		}
	})
}

// TestIRCSlowConsumerIsDisconnected: a client that never reads is dropped once its send queue
// overflows, while a member that reads keeps receiving every message.
func TestIRCSlowConsumerIsDisconnected(t *testing.T) {
	slowConsumerScenario(t)
}

// TestIRCSlowConsumerQuitReason: the QUIT of a client dropped for a full send queue says so.
func TestIRCSlowConsumerQuitReason(t *testing.T) {
	if q := slowConsumerScenario(t); !strings.Contains(q, "SendQ exceeded") {
		t.Fatalf("QUIT reason %q, want SendQ exceeded", q)
	}
}

// slowConsumerScenario runs the slow-consumer test and returns the QUIT reason the others saw.
func slowConsumerScenario(t *testing.T) string {
	n := startNode(t, t.TempDir(), nil)
	reader, _ := guest(t, n, "bulkreader", "message-tags")
	joinChannels(t, reader, "#bulk")
	// Several senders share the volume.
	const senders = 4
	var out []*ircclient.Client
	for i := 0; i < senders; i++ {
		// Without message-tags the senders receive none of the TAGMSG volume themselves, so only the
		// slow client can fall behind.
		c, _ := guest(t, n, fmt.Sprintf("bulksender%d", i))
		joinChannels(t, c, "#bulk")
		out = append(out, c)
	}

	// The slow client registers and joins over a raw socket with a tiny receive buffer, then never
	// reads again.
	raw, err := net.Dial("tcp", n.IRCAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	if tc, ok := raw.(*net.TCPConn); ok {
		tc.SetReadBuffer(4096)
	}
	fmt.Fprintf(raw, "CAP REQ :message-tags\r\nNICK bulkslow\r\nUSER bulkslow 0 * :slow\r\nCAP END\r\nJOIN #bulk\r\n")
	br := bufio.NewReader(raw)
	raw.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("slow client registration: %v", err)
		}
		if m, err := ircmsg.Parse(strings.TrimRight(line, "\r\n")); err == nil && m.Command == "366" {
			break
		}
	}
	expectFrom(t, reader, "bulkslow", "JOIN", "#bulk")

	// The volume is TAGMSGs carrying 4 KB of client tags: they cost the server no storage. A round is
	// 32 of them (128 KB), which the reader reads before the next.
	const perRound = 8
	const maxMessages = 4000 // about 16 MB: far more than a 256 KiB send queue plus socket buffers
	payload := strings.Repeat("z", 4000)
	sent, received := 0, 0
	quitSeen := ""
	isBulk := func(m ircmsg.Message) bool {
		return m.Command == "TAGMSG" && strings.HasPrefix(m.Source, "bulksender")
	}
	for sent < maxMessages && quitSeen == "" {
		for i := 0; i < perRound; i++ {
			for s, c := range out {
				sendLines(t, c, fmt.Sprintf("@+bulk=%d-%05d-%s TAGMSG #bulk", s, sent/senders, payload))
				sent++
			}
		}
		for _, m := range readUntil(t, reader, fmt.Sprintf("%d messages", sent), func(m ircmsg.Message) bool {
			if isBulk(m) {
				received++
			}
			return received == sent
		}) {
			if m.Command == "QUIT" && isFrom(m, "bulkslow") {
				quitSeen = m.Param(0)
			}
		}
	}
	if quitSeen == "" {
		// The QUIT may trail the last round.
		for _, m := range drain(t, reader) {
			if m.Command == "QUIT" && isFrom(m, "bulkslow") {
				quitSeen = m.Param(0)
			}
		}
	}
	if quitSeen == "" {
		t.Fatalf("the non-reading client was not disconnected after %d messages of 4 KB", sent)
	}
	var member bool
	n.Machine().Read(func(st *fsm.State) {
		ch, ok := st.Channel("#bulk")
		member = st.NickInUse("bulkslow") || !ok || ch.MemberCount() != senders+1
	})
	if member {
		t.Fatal("the slow client is still a session or member")
	}
	// The reader saw every message, each sender's in order.
	next := make([]int, senders)
	for _, m := range reader.Seen() {
		if !isBulk(m) {
			continue
		}
		var s, seq int
		if _, err := fmt.Sscanf(m.Tags["+bulk"], "%d-%d-", &s, &seq); err != nil || s < 0 || s >= senders || seq != next[s] {
			t.Fatalf("reader got %.20q, want sender %d message %d next", m.Tags["+bulk"], s, next[s])
		}
		next[s]++
	}
	if received != sent {
		t.Fatalf("reader got %d of %d messages", received, sent)
	}
	return quitSeen
}

// TestIRCTagDataLimit follows IRCv3 message-tags: a client's tag data (between '@' and the space,
// every tag counted, client-only or not) may be 4094 bytes; a line with more is answered 417 and
// dropped, whatever its command, and its tags are never truncated.
func TestIRCTagDataLimit(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	alice, _ := guest(t, n, "tagalice", "message-tags", "echo-message")
	bob, _ := guest(t, n, "tagbob", "message-tags")
	joinChannels(t, alice, "#tags")
	joinChannels(t, bob, "#tags")
	const maxTagData = 4094
	// "foo=bar;+baz=" is 13 bytes of the tag data, the rest is the value of +baz.
	value := func(tagData int) string { return strings.Repeat("a", tagData-len("foo=bar;+baz=")) }
	for _, tc := range []struct {
		name, rest string
		tagData    int
		relayed    bool
	}{
		{"TAGMSG at the limit", "TAGMSG #tags", maxTagData, true},
		{"PRIVMSG at the limit", "PRIVMSG #tags :hi", maxTagData, true},
		{"TAGMSG one byte over", "TAGMSG #tags", maxTagData + 1, false},
		{"PRIVMSG one byte over", "PRIVMSG #tags :hi", maxTagData + 1, false},
		{"any command over", "PING over", maxTagData + 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := value(tc.tagData)
			sendLines(t, alice, "@foo=bar;+baz="+v+" "+tc.rest)
			got := drain(t, alice)
			if !tc.relayed {
				if _, ok := findMsg(got, "417"); !ok {
					t.Fatalf("no 417 for %d bytes of tag data: %v", tc.tagData, commandsOf(got))
				}
				refuteMsg(t, got, "PONG", "over")
				if msgs := drain(t, bob); len(msgs) != 0 {
					t.Fatalf("relayed: %v", commandsOf(msgs))
				}
				return
			}
			refuteMsg(t, got, "417")
			m := expectFrom(t, bob, "tagalice", strings.Fields(tc.rest)[0], "#tags")
			if m.Tags["+baz"] != v {
				t.Fatalf("+baz relayed with %d bytes, want %d", len(m.Tags["+baz"]), len(v))
			}
		})
	}
}
