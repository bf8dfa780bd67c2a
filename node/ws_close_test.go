package node

import (
	"bufio"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestWebSocketIRCCloseAfterQUIT: after QUIT the server closes IRC over WebSocket with one Close
// frame carrying its code, and after the client's echo sends nothing more but the end of the TCP
// connection (RFC 6455 §5.5.1, §7.1). The client is written frame by frame so that a second
// Close, which browsers report as "Close received after close" and a 1006, would be seen.
func TestWebSocketIRCCloseAfterQUIT(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	ws := dialRawWebSocket(t, n.HTTPAddr(), "/irc")
	ws.sendText(t, "NICK closer")
	ws.sendText(t, "USER closer 0 * :closer")
	ws.sendText(t, "QUIT :bye")

	// Lines until the server's Close.
	var sawError bool
	var code uint16
	for {
		op, payload := ws.readFrame(t)
		if op == wsOpText && strings.HasPrefix(string(payload), "ERROR") {
			sawError = true
		}
		if op == wsOpClose {
			if len(payload) < 2 {
				t.Fatalf("the server's Close carries no code: %q", payload)
			}
			code = binary.BigEndian.Uint16(payload)
			break
		}
	}
	if !sawError {
		t.Error("no ERROR line before the Close")
	}
	if code != 1000 {
		t.Errorf("close code %d, want 1000", code)
	}
	// The client echoes the code; the server then only ends the connection.
	ws.send(t, wsOpClose, binary.BigEndian.AppendUint16(nil, code))
	if op, payload, err := ws.tryReadFrame(); err == nil {
		t.Fatalf("after the client's echo the server sent opcode %d %q, want the end of the connection", op, payload)
	} else if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isConnReset(err) {
		t.Fatalf("after the echo: %v, want the end of the connection", err)
	}
}

const (
	wsOpText  = 1
	wsOpClose = 8
)

// rawWebSocket is the client side of a WebSocket written by hand: the tests see every frame.
type rawWebSocket struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialRawWebSocket(t *testing.T, addr, path string) *rawWebSocket {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	// A guard against a server that never answers, not a synchronization.
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	key := base64.StdEncoding.EncodeToString(nonce[:])
	req := "GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		t.Fatalf("upgrade answered %s %v", resp.Status, resp.Header)
	}
	return &rawWebSocket{conn: conn, r: r}
}

func (w *rawWebSocket) sendText(t *testing.T, line string) { w.send(t, wsOpText, []byte(line)) }

// send writes one final, masked frame.
func (w *rawWebSocket) send(t *testing.T, op byte, payload []byte) {
	t.Helper()
	if len(payload) > 125 {
		t.Fatalf("frame of %d bytes: the test client writes short frames only", len(payload))
	}
	var mask [4]byte
	_, _ = rand.Read(mask[:])
	frame := []byte{0x80 | op, 0x80 | byte(len(payload))}
	frame = append(frame, mask[:]...)
	for i, b := range payload {
		frame = append(frame, b^mask[i%4])
	}
	if _, err := w.conn.Write(frame); err != nil {
		t.Fatalf("write frame: %v", err)
	}
}

func (w *rawWebSocket) readFrame(t *testing.T) (byte, []byte) {
	t.Helper()
	op, payload, err := w.tryReadFrame()
	if err != nil {
		t.Fatalf("read frame: %v", err)
	}
	return op, payload
}

// tryReadFrame reads one unmasked frame from the server.
func (w *rawWebSocket) tryReadFrame() (byte, []byte, error) {
	var head [2]byte
	if _, err := io.ReadFull(w.r, head[:]); err != nil {
		return 0, nil, err
	}
	if head[1]&0x80 != 0 {
		return 0, nil, errors.New("the server masked a frame")
	}
	n := uint64(head[1] & 0x7f)
	switch n {
	case 126:
		var ext [2]byte
		if _, err := io.ReadFull(w.r, ext[:]); err != nil {
			return 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(ext[:]))
	case 127:
		var ext [8]byte
		if _, err := io.ReadFull(w.r, ext[:]); err != nil {
			return 0, nil, err
		}
		n = binary.BigEndian.Uint64(ext[:])
	}
	if n > 1<<20 {
		return 0, nil, errors.New("frame over 1 MiB")
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(w.r, payload); err != nil {
		return 0, nil, err
	}
	return head[0] & 0x0f, payload, nil
}

func isConnReset(err error) bool {
	return strings.Contains(err.Error(), "connection reset")
}
