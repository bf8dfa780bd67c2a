package irc_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// TestIRCGuestsOverEveryTransport registers guests over TCP, TLS and WebSocket in one channel and
// checks that a message from each reaches the others.
func TestIRCGuestsOverEveryTransport(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	clients := []struct {
		nick   string
		secure bool
		c      *ircclient.Client
	}{
		{"viatcp", false, dial(t, n)},
		{"viatls", true, dialTLS(t, n)},
		{"viaws", false, dialWS(t, n)}, // ws://, not wss://
	}
	for _, cl := range clients {
		w, err := cl.c.Register(testCtx(t), cl.nick)
		if err != nil {
			t.Fatalf("register %s: %v", cl.nick, err)
		}
		if w.Param(0) != cl.nick {
			t.Fatalf("001 = %q", w.String())
		}
		joinChannels(t, cl.c, "#transports")
	}
	for i, from := range clients {
		sendLines(t, from.c, "PRIVMSG #transports :hello from "+from.nick)
		for j, to := range clients {
			if i != j {
				expectFrom(t, to.c, from.nick, "PRIVMSG", "#transports", "hello from "+from.nick)
			}
		}
	}
	// WHOIS reports the encrypted transports as secure, and only them.
	for _, cl := range clients {
		t.Run("WHOIS "+cl.nick, func(t *testing.T) {
			if cl.nick == "viaws" {
			}
			sendLines(t, clients[0].c, "WHOIS "+cl.nick)
			msgs := readUntil(t, clients[0].c, "318", func(m ircmsg.Message) bool { return m.Command == "318" })
			_, secure := findMsg(msgs, "671", cl.nick)
			if secure != cl.secure {
				t.Errorf("WHOIS %s: 671 present = %v, want %v", cl.nick, secure, cl.secure)
			}
		})
	}
}

// TestIRCWebSocketFramesHoldOneLine speaks raw WebSocket: each client frame is one line without CRLF,
// and every server frame holds exactly one IRC line without CRLF.
func TestIRCWebSocketFramesHoldOneLine(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	ctx := testCtx(t)
	ws, _, err := websocket.Dial(ctx, "ws://"+n.HTTPAddr()+"/irc", nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer ws.Close(websocket.StatusNormalClosure, "")
	for _, line := range []string{"CAP LS 302", "NICK rawws", "USER rawws 0 * :Raw WS", "CAP END"} {
		if err := ws.Write(ctx, websocket.MessageText, []byte(line)); err != nil {
			t.Fatalf("write %q: %v", line, err)
		}
	}
	// A frame may also end in CRLF, or be binary; an over-long one is refused and the connection goes on.
	for _, f := range []struct {
		typ  websocket.MessageType
		line string
	}{
		{websocket.MessageBinary, "PING binary"},
		{websocket.MessageText, "AWAY :" + strings.Repeat("x", 9000)},
		{websocket.MessageText, "PING crlf\r\n"},
	} {
		if err := ws.Write(ctx, f.typ, []byte(f.line)); err != nil {
			t.Fatal(err)
		}
	}
	frames := 0
	seen := map[string]bool{}
	for {
		readCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
		typ, data, err := ws.Read(readCtx)
		cancel()
		if err != nil {
			t.Fatalf("read frame %d: %v (seen %v)", frames, err, seen)
		}
		frames++
		if typ != websocket.MessageText {
			t.Fatalf("frame %d is %v, want text", frames, typ)
		}
		if strings.ContainsAny(string(data), "\r\n") {
			t.Fatalf("frame %d holds a line ending: %q", frames, data)
		}
		m, err := ircmsg.Parse(string(data))
		if err != nil {
			t.Fatalf("frame %d is not one IRC line: %q: %v", frames, data, err)
		}
		seen[m.Command] = true
		if m.Command == "PONG" {
			seen["PONG "+m.Param(1)] = true
			if m.Param(1) == "crlf" {
				break
			}
		}
	}
	for _, want := range []string{"CAP", "001", "005", "422", "PONG binary", "417"} {
		if !seen[want] {
			t.Errorf("no %s frame before the PONG", want)
		}
	}
}
