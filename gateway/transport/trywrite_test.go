package transport

import (
	"bytes"
	"io"
	"net"
	"testing"
)

// TestStreamConnTryWriteNeverWaits fills a TCP connection whose peer does not read: TryWrite
// takes less and less, then nothing, and returns instead of waiting for the peer; what it took
// arrives whole and in order once the peer reads, followed by what WriteLines writes after.
func TestStreamConnTryWriteNeverWaits(t *testing.T) {
	server, client := loopbackPair(t)
	conn := NewStreamConn(server, KindTCP).(TryWriter)
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	var sent []byte
	for full := false; !full; {
		n, err := conn.TryWrite(chunk)
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, chunk[:n]...)
		full = n < len(chunk)
		if len(sent) > 256<<20 {
			t.Fatal("the socket never filled")
		}
	}
	n, err := conn.TryWrite(chunk)
	if err != nil || n != 0 {
		t.Fatalf("TryWrite on a full socket = %d, %v; want 0, nil", n, err)
	}
	tail := []byte("TAIL\r\n")
	done := make(chan error, 1)
	go func() { done <- conn.(Conn).WriteLines([][]byte{tail}) }()
	want := append(append([]byte(nil), sent...), tail...)
	got := make([]byte, len(want))
	if _, err := io.ReadFull(client, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the bytes read differ from the bytes written")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestTryWriteTakesNothingWithoutARawSocket: a stream that is not a plain TCP socket (a pipe
// here, TLS in production) cannot write without waiting, so TryWrite takes nothing and the
// caller falls back to WriteLines.
func TestTryWriteTakesNothingWithoutARawSocket(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	n, err := NewStreamConn(a, KindTCP).(TryWriter).TryWrite([]byte("PING\r\n"))
	if n != 0 || err != nil {
		t.Fatalf("TryWrite over a pipe = %d, %v; want 0, nil", n, err)
	}
}

// TestTryWriteAfterCloseFails: a closed connection reports an error rather than taking bytes.
func TestTryWriteAfterCloseFails(t *testing.T) {
	server, _ := loopbackPair(t)
	conn := NewStreamConn(server, KindTCP)
	conn.Close()
	if n, err := conn.(TryWriter).TryWrite([]byte("PING\r\n")); err == nil || n != 0 {
		t.Fatalf("TryWrite after Close = %d, %v; want 0 and an error", n, err)
	}
}
