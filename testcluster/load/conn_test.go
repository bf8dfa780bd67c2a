package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// fakeConn is a net.Conn that reads from a fixed buffer.
type fakeConn struct {
	net.Conn
	r io.Reader
}

func (f fakeConn) Read(p []byte) (int, error) { return f.r.Read(p) }

func readAllLines(t testing.TB, input []byte) []string {
	t.Helper()
	c := &tcpLineConn{conn: fakeConn{r: bytes.NewReader(input)}, r: bufio.NewReaderSize(bytes.NewReader(input), readBufferSize)}
	var lines []string
	for {
		line, err := c.readLine(context.Background())
		if errors.Is(err, io.EOF) {
			return lines
		}
		if err != nil {
			t.Fatalf("readLine: %v", err)
		}
		lines = append(lines, line)
	}
}

func TestTCPReadLine(t *testing.T) {
	long := strings.Repeat("a", readBufferSize*3/2) // longer than the buffer, within the line limit
	tooLong := strings.Repeat("b", ircmsg.MaxLineBytes+10)
	tests := []struct {
		name  string
		input string
		want  []string
	}{
		{"CRLF and LF", "PING :x\r\n:s 001 n :hi\n", []string{"PING :x", ":s 001 n :hi"}},
		{"empty lines skipped", "\r\n\nA\r\n\r\n", []string{"A"}},
		{"line longer than the buffer is assembled", "A\r\n" + long + "\r\nB\r\n", []string{"A", long, "B"}},
		{"over-long line dropped", "A\r\n" + tooLong + "\r\nB\r\n", []string{"A", "B"}},
		{"unterminated last line dropped", "A\r\nB", []string{"A"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readAllLines(t, []byte(tt.input))
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("lines = %q, want %q", got, tt.want)
			}
		})
	}
}

func FuzzTCPReadLine(f *testing.F) {
	f.Add([]byte("PING :x\r\n:s 001 n :hi\n"))
	f.Add([]byte(strings.Repeat("x", readBufferSize+1) + "\n"))
	f.Add([]byte("\r\r\n\n"))
	f.Fuzz(func(t *testing.T, input []byte) {
		for _, line := range readAllLines(t, input) {
			if line == "" || strings.ContainsAny(line[len(line)-1:], "\n") || len(line) > ircmsg.MaxLineBytes {
				t.Fatalf("bad line %q", line)
			}
		}
	})
}

func TestParseTransportCurveAndSources(t *testing.T) {
	for in, want := range map[string]Transport{"tcp": TransportTCP, "WS": TransportWebSocket, "websocket": TransportWebSocket} {
		if got, err := ParseTransport(in); err != nil || got != want {
			t.Errorf("ParseTransport(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseTransport("udp"); err == nil {
		t.Error("ParseTransport(udp) succeeded")
	}
	for in, want := range map[string]Curve{"ed25519": CurveEd25519, "secp256k1": CurveSecp256k1, "K256": CurveSecp256k1} {
		if got, err := ParseCurve(in); err != nil || got != want {
			t.Errorf("ParseCurve(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseCurve("p256"); err == nil {
		t.Error("ParseCurve(p256) succeeded")
	}
	addrs, err := ParseSourceAddrs(" 127.0.0.1, 127.0.0.2,,")
	if err != nil || len(addrs) != 2 || addrs[1] != netip.MustParseAddr("127.0.0.2") {
		t.Errorf("ParseSourceAddrs = %v, %v", addrs, err)
	}
	if _, err := ParseSourceAddrs("127.0.0.300"); err == nil {
		t.Error("ParseSourceAddrs accepted a bad address")
	}
}

func TestNewDialerNeedsAnAddress(t *testing.T) {
	tests := []Target{
		{},
		{Transport: TransportWebSocket, IRCAddr: "127.0.0.1:1"},
		{Transport: "carrier-pigeon", IRCAddr: "127.0.0.1:1"},
	}
	for _, tt := range tests {
		if _, err := newDialer(tt); err == nil {
			t.Errorf("newDialer(%+v) succeeded", tt)
		}
	}
}

func TestAuthenticateLines(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		want    []string
	}{
		{"empty", "", []string{"AUTHENTICATE +"}},
		{"short", "abc", []string{"AUTHENTICATE abc"}},
		{"exactly one chunk ends with +", strings.Repeat("x", 400), []string{"AUTHENTICATE " + strings.Repeat("x", 400), "AUTHENTICATE +"}},
		{"one and a bit", strings.Repeat("x", 401), []string{"AUTHENTICATE " + strings.Repeat("x", 400), "AUTHENTICATE x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := authenticateLines(tt.payload)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("authenticateLines = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFailureKind(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&loginError{"connect", errors.New("connection refused")}, "connect: error"},
		{&loginError{"sasl", context.DeadlineExceeded}, "sasl: timeout"},
		{&loginError{"register", ErrRefused}, "register: refused"},
		{&loginError{"caps", io.EOF}, "caps: closed by the server"},
		{errors.New("other"), "login: error"},
	}
	for _, tt := range tests {
		if got := failureKind(tt.err); got != tt.want {
			t.Errorf("failureKind(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
