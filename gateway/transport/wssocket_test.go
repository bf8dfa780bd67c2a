package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// wsFrame encodes one final frame of opcode op (RFC 6455 §5.2), masked with key when masked.
func wsFrame(op byte, payload []byte, masked bool) []byte {
	key := [4]byte{0x12, 0x34, 0x56, 0x78}
	b := []byte{0x80 | op}
	maskBit := byte(0)
	if masked {
		maskBit = 0x80
	}
	switch n := len(payload); {
	case n < 126:
		b = append(b, maskBit|byte(n))
	case n <= 0xffff:
		b = append(b, maskBit|126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, maskBit|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	if !masked {
		return append(b, payload...)
	}
	b = append(b, key[:]...)
	for i, c := range payload {
		b = append(b, c^key[i%4])
	}
	return b
}

// frameSizes cover every header form: 7-bit, 16-bit and 64-bit lengths, empty payloads.
var frameSizes = []int{0, 1, 13, 125, 126, 127, 600, 65535, 65536}

// frameStream is one frame of each size, as a client (masked) or a server (unmasked) sends them,
// with the offsets where each frame ends.
func frameStream(masked bool) ([]byte, []int) {
	var stream []byte
	var ends []int
	for i, n := range frameSizes {
		stream = append(stream, wsFrame(0x2, bytes.Repeat([]byte{byte('a' + i)}, n), masked)...)
		ends = append(ends, len(stream))
	}
	return stream, ends
}

func TestFrameScanner(t *testing.T) {
	for _, masked := range []bool{false, true} {
		stream, ends := frameStream(masked)
		isEnd := map[int]bool{}
		for _, e := range ends {
			isEnd[e] = true
		}
		// Byte by byte: the scanner is at a boundary exactly at the ends of frames, and what it
		// allows never reaches past the end of the frame.
		var f frameScanner
		next := 0
		for i := range stream {
			if got := f.atBoundary(); got != (i == 0 || isEnd[i]) {
				t.Fatalf("masked=%v: atBoundary at offset %d = %v", masked, i, got)
			}
			for ends[next] <= i {
				next++
			}
			if a := f.allowance(); a < 1 || i+a > ends[next] {
				t.Fatalf("masked=%v: allowance %d at offset %d crosses the frame end at %d", masked, a, i, ends[next])
			}
			f.advance(stream[i : i+1])
		}
		if !f.atBoundary() {
			t.Fatalf("masked=%v: not at a boundary after the last frame", masked)
		}
		// In pieces of any size, the boundaries seen after each piece are the same.
		for _, piece := range []int{2, 3, 7, 16, 100, 4096, len(stream)} {
			var f frameScanner
			for i := 0; i < len(stream); i += piece {
				end := min(i+piece, len(stream))
				f.advance(stream[i:end])
				if got := f.atBoundary(); got != isEnd[end] {
					t.Fatalf("masked=%v pieces of %d: atBoundary after offset %d = %v", masked, piece, end, got)
				}
			}
		}
	}
}

// recordingConn is a net.Conn whose reads come from in and whose writes are recorded one by one.
type recordingConn struct {
	net.Conn
	in     *bytes.Reader
	writes [][]byte
}

func (c *recordingConn) Read(p []byte) (int, error) { return c.in.Read(p) }

func (c *recordingConn) Write(p []byte) (int, error) {
	c.writes = append(c.writes, bytes.Clone(p))
	return len(p), nil
}

func TestWSSocketWritesWholeFrames(t *testing.T) {
	stream, ends := frameStream(false)
	rec := &recordingConn{}
	s := newWSSocket(rec, nil)
	// As the library writes a frame: its header byte by byte, the payload, a flush, through a
	// 16-byte writer.
	bw := bufio.NewWriterSize(s, wsLibraryBufferSize)
	start := 0
	for _, end := range ends {
		frame := stream[start:end]
		hdr := frameHeaderLen(frame[1])
		for _, b := range frame[:hdr] {
			if err := bw.WriteByte(b); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := bw.Write(frame[hdr:]); err != nil {
			t.Fatal(err)
		}
		if err := bw.Flush(); err != nil {
			t.Fatal(err)
		}
		if s.wbuf != nil {
			t.Fatalf("frame of %d bytes: a write buffer is kept after the frame", len(frame))
		}
		var got []byte
		for _, w := range rec.writes {
			got = append(got, w...)
		}
		if !bytes.Equal(got, frame) {
			t.Fatalf("frame of %d bytes written as %d bytes", len(frame), len(got))
		}
		// One write per frame, unless the frame is larger than the largest write buffer.
		if len(frame) <= writeBufSize && len(rec.writes) != 1 {
			t.Fatalf("frame of %d bytes written in %d writes", len(frame), len(rec.writes))
		}
		rec.writes = nil
		start = end
	}
}

func TestWSSocketReadStopsAtFrameEnd(t *testing.T) {
	stream, ends := frameStream(true)
	s := newWSSocket(&recordingConn{in: bytes.NewReader(stream)}, nil)
	// As the library reads a frame: its header byte by byte, then the payload, through a
	// 16-byte reader. After each frame the reader holds nothing of the next one, and the socket
	// is idle exactly when it holds no input.
	br := bufio.NewReaderSize(s, wsLibraryBufferSize)
	start := 0
	for i, end := range ends {
		var hdr []byte
		for len(hdr) < 2 || len(hdr) < int(frameHeaderLen(hdr[1])) {
			b, err := br.ReadByte()
			if err != nil {
				t.Fatal(err)
			}
			hdr = append(hdr, b)
		}
		if want := stream[start:end]; !bytes.Equal(hdr, want[:len(hdr)]) {
			t.Fatalf("frame %d: header %x, want %x", i, hdr, want[:len(hdr)])
		}
		payload := make([]byte, framePayloadLen(hdr))
		if _, err := io.ReadFull(br, payload); err != nil {
			t.Fatal(err)
		}
		if br.Buffered() != 0 {
			t.Fatalf("frame %d: the reader holds %d bytes past the frame's end", i, br.Buffered())
		}
		if s.inputIdle() != (s.lent == nil) {
			t.Fatalf("frame %d: idle %v with a buffer held %v", i, s.inputIdle(), s.lent != nil)
		}
		start = end
	}
	if !s.inputIdle() || s.lent != nil {
		t.Fatal("input held after the last frame")
	}
}

// rawWSClient performs a WebSocket upgrade of /irc on addr over a plain TCP connection, with
// extra written in the same write as the request, and returns the connection after the
// response's header.
func rawWSClient(t *testing.T, addr string, extra []byte) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	req := "GET /irc HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := c.Write(append([]byte(req), extra...)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade answered %s", resp.Status)
	}
	return c, br
}

// acceptOne serves one WebSocket upgrade with AcceptWebSocket and returns the server's address
// and the accepted connection to come.
func acceptOne(t *testing.T) (string, <-chan Conn) {
	t.Helper()
	accepted := make(chan Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := AcceptWebSocket(context.Background(), w, r, nil, nil)
		if err != nil {
			t.Errorf("accept: %v", err)
			return
		}
		accepted <- conn
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), accepted
}

// readLineWithin is ReadLine, failing the test instead of hanging when no line comes.
func readLineWithin(t *testing.T, conn Conn) string {
	t.Helper()
	type result struct {
		line string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		line, err := conn.ReadLine()
		got <- result{string(line), err}
	}()
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("ReadLine: %v", r.err)
		}
		return r.line
	case <-time.After(10 * time.Second):
		t.Fatal("ReadLine did not return a line that had arrived")
		return ""
	}
}

func TestWebSocketInputAlreadyArrived(t *testing.T) {
	lines := []string{"NICK a", "USER a 0 * :a", "CAP END"}
	var frames []byte
	for _, l := range lines {
		frames = append(frames, wsFrame(0x1, []byte(l+"\r\n"), true)...)
	}
	tests := []struct {
		name              string
		withRequest, more []byte
	}{
		// Read by the HTTP server with the upgrade request, before the WebSocket exists.
		{"with the upgrade request", frames, nil},
		// Several messages in one segment: after the first, the rest wait in the socket's
		// buffer, not in the kernel, and must be read without waiting for more input.
		{"in one segment after the upgrade", nil, frames},
		// A ping between messages is answered and skipped.
		{"with a ping between", nil, append(append(wsFrame(0x1, []byte(lines[0]), true), wsFrame(0x9, []byte("p"), true)...), frames[len(wsFrame(0x1, []byte(lines[0]+"\r\n"), true)):]...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr, accepted := acceptOne(t)
			c, _ := rawWSClient(t, addr, tt.withRequest)
			conn := <-accepted
			// The client goes first, so that the close handshake does not wait for it.
			defer conn.Close()
			defer c.Close()
			if tt.more != nil {
				if _, err := c.Write(tt.more); err != nil {
					t.Fatal(err)
				}
			}
			for _, want := range lines {
				if got := readLineWithin(t, conn); got != want {
					t.Fatalf("ReadLine = %q, want %q", got, want)
				}
			}
		})
	}
}

func TestWebSocketIdleAnswersPing(t *testing.T) {
	conn, client := wsPair(t, wsAccepts[0].accept)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The server waits for a message; the client's ping is answered meanwhile.
	lineRead := make(chan string, 1)
	go func() {
		line, _ := conn.ReadLine()
		lineRead <- string(line)
	}()
	clientRead := make(chan error, 1)
	go func() {
		_, _, err := client.Read(ctx)
		clientRead <- err
	}()
	if err := client.Ping(ctx); err != nil {
		t.Fatalf("ping while the server idles: %v", err)
	}
	if err := client.Write(ctx, websocket.MessageText, []byte("PING :x")); err != nil {
		t.Fatal(err)
	}
	if got := <-lineRead; got != "PING :x" {
		t.Fatalf("ReadLine after the ping = %q", got)
	}
	client.CloseNow()
	if err := <-clientRead; err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("client read = %v", err)
	}
}

// FuzzFrameScanner feeds arbitrary bytes, whole and in pieces: the scanner always allows at least
// one byte, and where it stands does not depend on how the stream was cut.
func FuzzFrameScanner(f *testing.F) {
	stream, _ := frameStream(true)
	f.Add(stream[:200], uint8(3))
	f.Add([]byte{0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4}, uint8(1))
	f.Add([]byte{0x82, 0x7e, 0x00}, uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, piece uint8) {
		var whole, cut frameScanner
		whole.advance(data)
		step := int(piece)%32 + 1
		for i := 0; i < len(data); i += step {
			if cut.allowance() < 1 {
				t.Fatalf("allowance %d at offset %d", cut.allowance(), i)
			}
			cut.advance(data[i:min(i+step, len(data))])
		}
		if whole != cut {
			t.Fatalf("whole %+v, in pieces of %d %+v", whole, step, cut)
		}
	})
}
