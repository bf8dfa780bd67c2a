package ircclient

import (
	"bufio"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fakeConn is the server side of one scripted test connection. Its helpers
// report failures with t.Errorf and end the script goroutine.
type fakeConn struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

// startFakeServer listens on 127.0.0.1, accepts one connection and runs
// script on it in a goroutine. Cleanup closes everything and waits for the
// script to end.
func startFakeServer(t *testing.T, script func(fc *fakeConn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, err := ln.Accept()
		if err != nil {
			t.Errorf("fake server: accept: %v", err)
			return
		}
		defer conn.Close()
		script(&fakeConn{t: t, conn: conn, r: bufio.NewReader(conn)})
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return ln.Addr().String()
}

// readLine returns the next line from the client without CRLF.
func (fc *fakeConn) readLine() string {
	if err := fc.conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		fc.fail("set deadline: %v", err)
	}
	line, err := fc.r.ReadString('\n')
	if err != nil {
		fc.fail("read: %v", err)
	}
	if !strings.HasSuffix(line, "\r\n") {
		fc.fail("line %q does not end with CRLF", line)
	}
	return strings.TrimSuffix(line, "\r\n")
}

// expect reads a line and checks it equals want.
func (fc *fakeConn) expect(want string) {
	if got := fc.readLine(); got != want {
		fc.fail("client sent %q, want %q", got, want)
	}
}

// send writes raw lines, each followed by CRLF.
func (fc *fakeConn) send(lines ...string) {
	for _, line := range lines {
		if _, err := fc.conn.Write([]byte(line + "\r\n")); err != nil {
			fc.fail("write: %v", err)
		}
	}
}

func (fc *fakeConn) fail(format string, args ...any) {
	fc.t.Errorf("fake server: "+format, args...)
	runtime.Goexit()
}
