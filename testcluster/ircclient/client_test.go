package ircclient

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func dialTest(t *testing.T, addr string) *Client {
	t.Helper()
	c, err := Dial(testContext(t), addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestReadMessageSequence(t *testing.T) {
	addr := startFakeServer(t, func(fc *fakeConn) {
		fc.send(":srv NOTICE * :one", "", "BAD\x00LINE", strings.Repeat("x", ircmsg.MaxLineBytes+10), ":srv 001 me :hi")
		fc.conn.Write([]byte("PING :last-without-crlf"))
	})
	c := dialTest(t, addr)
	ctx := testContext(t)

	steps := []struct {
		wantCommand string
		wantErr     error
	}{
		{wantCommand: "NOTICE"},
		{wantErr: ircmsg.ErrMalformed},
		{wantErr: ErrLineTooLong},
		{wantCommand: "001"},
		{wantCommand: "PING"},
		{wantErr: io.EOF},
		{wantErr: io.EOF},
	}
	for i, step := range steps {
		msg, err := c.ReadMessage(ctx)
		if step.wantErr != nil {
			if !errors.Is(err, step.wantErr) {
				t.Fatalf("step %d: err = %v, want %v", i, err, step.wantErr)
			}
			continue
		}
		if err != nil || msg.Command != step.wantCommand {
			t.Fatalf("step %d: got %v, %v; want command %s", i, msg, err, step.wantCommand)
		}
	}
	if got := len(c.Seen()); got != 3 {
		t.Errorf("Seen has %d messages, want 3", got)
	}
}

func TestReadMessageContextEndsWithoutLosingLines(t *testing.T) {
	addr := startFakeServer(t, func(fc *fakeConn) {
		fc.expect("GO")
		fc.send(":srv NOTICE me :after")
		fc.expect("QUIT")
	})
	c := dialTest(t, addr)

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.ReadMessage(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadMessage(cancelled) err = %v, want context.Canceled", err)
	}
	if err := c.Send("GO"); err != nil {
		t.Fatal(err)
	}
	msg, err := c.ReadMessage(testContext(t))
	if err != nil || msg.Param(1) != "after" {
		t.Fatalf("ReadMessage = %v, %v", msg, err)
	}
	if err := c.Send("QUIT"); err != nil {
		t.Fatal(err)
	}
}

func TestExpectKeepsHistory(t *testing.T) {
	addr := startFakeServer(t, func(fc *fakeConn) {
		fc.send(":srv NOTICE me :a", ":srv NOTICE me :b", ":srv NOTICE me :c", ":srv 005 me X=1 :are supported")
		fc.expect("QUIT")
	})
	c := dialTest(t, addr)
	c.seenLimit = 3 // exercise the ring buffer
	ctx := testContext(t)

	msg, err := c.Expect(ctx, func(m ircmsg.Message) bool { return m.Param(1) == "c" })
	if err != nil || msg.Param(1) != "c" {
		t.Fatalf("Expect = %v, %v", msg, err)
	}
	if _, err := c.ExpectCommand(ctx, "372", "005"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range c.Seen() {
		got = append(got, m.String())
	}
	want := []string{":srv NOTICE me b", ":srv NOTICE me c", ":srv 005 me X=1 :are supported"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Seen = %q, want %q", got, want)
	}
	if err := c.Send("QUIT"); err != nil {
		t.Fatal(err)
	}
}

func TestSendAndClose(t *testing.T) {
	addr := startFakeServer(t, func(fc *fakeConn) {
		fc.expect("PRIVMSG #c :hello world")
		fc.expect("PRIVMSG #c :42")
	})
	c := dialTest(t, addr)
	if err := c.Send("PRIVMSG #c :hello world"); err != nil {
		t.Fatal(err)
	}
	if err := c.Sendf("PRIVMSG %s :%d", "#c", 42); err != nil {
		t.Fatal(err)
	}
	if err := c.Send("PRIVMSG #c :a\r\nQUIT"); err == nil {
		t.Error("Send accepted a line containing CRLF")
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := c.ReadMessage(testContext(t)); !errors.Is(err, io.EOF) {
		t.Errorf("ReadMessage after Close err = %v, want io.EOF", err)
	}
	if err := c.Send("PING x"); err == nil {
		t.Error("Send after Close succeeded")
	}
}

func TestHoldAnswersPing(t *testing.T) {
	addr := startFakeServer(t, func(fc *fakeConn) {
		fc.send("PING :cookie 1")
		fc.expect("PONG :cookie 1")
		fc.send("PING srv")
		fc.expect("PONG srv")
	})
	c := dialTest(t, addr)
	if err := c.Hold(testContext(t)); !errors.Is(err, io.EOF) {
		t.Fatalf("Hold = %v, want io.EOF once the server closes", err)
	}

	addr = startFakeServer(t, func(fc *fakeConn) { fc.expect("QUIT") })
	c = dialTest(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Hold(ctx); err != nil {
		t.Fatalf("Hold with an ended context = %v, want nil", err)
	}
	if err := c.Send("QUIT"); err != nil {
		t.Fatal(err)
	}
}

func TestWebSocketFrames(t *testing.T) {
	frames := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			t.Errorf("accept: %v", err)
			return
		}
		defer conn.CloseNow()
		ctx := r.Context()
		for range 2 {
			_, data, err := conn.Read(ctx)
			if err != nil {
				t.Errorf("server read: %v", err)
				return
			}
			frames <- string(data)
		}
		conn.Write(ctx, websocket.MessageText, []byte(":srv 001 me :Welcome"))
		conn.Write(ctx, websocket.MessageBinary, []byte("PING :a\r\nPING :b\r\n"))
		conn.Close(websocket.StatusNormalClosure, "bye")
	}))
	defer srv.Close()

	ctx := testContext(t)
	c, err := DialWebSocket(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/irc")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, line := range []string{"NICK me", "USER me 0 * :me"} {
		if err := c.Send(line); err != nil {
			t.Fatal(err)
		}
		if got := <-frames; got != line {
			t.Errorf("frame = %q, want %q (no CRLF)", got, line)
		}
	}
	for _, want := range []string{"001", "PING", "PING"} {
		msg, err := c.ReadMessage(ctx)
		if err != nil || msg.Command != want {
			t.Fatalf("ReadMessage = %v, %v; want %s", msg, err, want)
		}
	}
	if _, err := c.ReadMessage(ctx); !errors.Is(err, io.EOF) {
		t.Errorf("after a normal close err = %v, want io.EOF", err)
	}
}
