package transport

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// loopbackPair returns both ends of a real TCP connection on 127.0.0.1.
func loopbackPair(t testing.TB) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

func TestStreamConnReadLine(t *testing.T) {
	pipeServer, pipeClient := net.Pipe()
	tcpServer, tcpClient := loopbackPair(t)
	tests := []struct {
		name           string
		server, client net.Conn
	}{
		{"pipe (net.Conn.Read)", pipeServer, pipeClient},
		{"tcp (RawConn)", tcpServer, tcpClient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn := NewStreamConn(tt.server, KindTCP)
			go func() {
				tt.client.Write([]byte("NICK a\r\nUS"))
				tt.client.Write([]byte("ER b\n" + strings.Repeat("x", MaxLineBytes) + "\r\nPING\r\n"))
				tt.client.Close()
			}()
			want := []readResult{{line: "NICK a"}, {line: "USER b"}, {err: ErrLineTooLong}, {line: "PING"}, {err: io.EOF}}
			var got []readResult
			for {
				line, err := conn.ReadLine()
				if err != nil && !errors.Is(err, ErrLineTooLong) {
					got = append(got, readResult{err: err})
					break
				}
				got = append(got, readResult{line: string(line), err: err})
			}
			if !equalResults(got, want) {
				t.Fatalf("got %s, want %s", describe(got), describe(want))
			}
			if got[len(got)-1].err != io.EOF {
				t.Fatalf("end of stream is %v, want io.EOF itself", got[len(got)-1].err)
			}
		})
	}
}

func TestStreamConnReadAfterOwnCloseIsEOF(t *testing.T) {
	server, _ := loopbackPair(t)
	conn := NewStreamConn(server, KindTCP)
	done := make(chan error, 1)
	go func() {
		_, err := conn.ReadLine()
		done <- err
	}()
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != io.EOF {
			t.Fatalf("ReadLine after Close = %v, want io.EOF", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadLine did not return after Close")
	}
	if err := conn.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

func TestStreamConnWriteLines(t *testing.T) {
	lines := [][]byte{[]byte("PING :a\r\n"), []byte(":srv 001 n :Welcome\r\n"), []byte("\r\n")}
	want := "PING :a\r\n:srv 001 n :Welcome\r\n\r\n"
	pipeServer, pipeClient := net.Pipe()
	tcpServer, tcpClient := loopbackPair(t)
	tests := []struct {
		name           string
		server, client net.Conn
	}{
		{"pipe", pipeServer, pipeClient},
		{"tcp", tcpServer, tcpClient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn := NewStreamConn(tt.server, KindTCP)
			snapshot := make([][]byte, len(lines))
			copy(snapshot, lines)
			received := make(chan string, 1)
			go func() {
				buf := make([]byte, len(want))
				_, err := io.ReadFull(tt.client, buf)
				if err != nil {
					received <- err.Error()
					return
				}
				received <- string(buf)
			}()
			if err := conn.WriteLines(lines); err != nil {
				t.Fatal(err)
			}
			if got := <-received; got != want {
				t.Fatalf("received %q, want %q", got, want)
			}
			for i := range lines {
				if &lines[i][0] != &snapshot[i][0] || len(lines[i]) != len(snapshot[i]) {
					t.Fatalf("WriteLines modified the caller's slice at %d", i)
				}
			}
			if err := conn.WriteLines(nil); err != nil {
				t.Fatalf("empty batch: %v", err)
			}
		})
	}
}

// TestStreamConnWriteLongBatch checks batches that do not fit one write buffer: several buffers,
// and lines longer than a buffer written on their own, all in order.
func TestStreamConnWriteLongBatch(t *testing.T) {
	line := func(size int, fill byte) []byte {
		return append(bytes.Repeat([]byte{fill}, size-2), '\r', '\n')
	}
	tests := []struct {
		name  string
		lines [][]byte
	}{
		{"many short lines", func() [][]byte {
			var ls [][]byte
			for i := range 1000 {
				ls = append(ls, line(100, byte('a'+i%26)))
			}
			return ls
		}()},
		{"a line longer than the buffer in the middle", [][]byte{line(10, 'a'), line(writeBufSize+100, 'b'), line(10, 'c')}},
		{"a line longer than the buffer first", [][]byte{line(3*writeBufSize, 'a'), line(10, 'b')}},
		{"lines that fill the buffer exactly", [][]byte{line(writeBufSize/2, 'a'), line(writeBufSize/2, 'b'), line(10, 'c')}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server, client := loopbackPair(t)
			conn := NewStreamConn(server, KindTCP)
			want := bytes.Join(tt.lines, nil)
			received := make(chan []byte, 1)
			go func() {
				buf := make([]byte, len(want))
				n, _ := io.ReadFull(client, buf)
				received <- buf[:n]
			}()
			if err := conn.WriteLines(tt.lines); err != nil {
				t.Fatal(err)
			}
			if got := <-received; !bytes.Equal(got, want) {
				t.Fatalf("received %d bytes that differ from the %d written", len(got), len(want))
			}
		})
	}
}

func TestStreamConnConcurrentWriteAndClose(t *testing.T) {
	for _, name := range []string{"pipe", "tcp"} {
		t.Run(name, func(t *testing.T) {
			var server, client net.Conn
			if name == "pipe" {
				server, client = net.Pipe()
			} else {
				server, client = loopbackPair(t)
			}
			go io.Copy(io.Discard, client)
			conn := NewStreamConn(server, KindTCP)
			err := closeWhileWriting(t, conn, 1000)
			if !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.ErrClosedPipe) {
				t.Fatalf("write after close = %v, want a closed error", err)
			}
			client.Close()
		})
	}
}

// closeWhileWriting closes conn while four goroutines write batches to it (rounds each, or until
// a write fails) and returns the error of a write after Close.
func closeWhileWriting(t *testing.T, conn Conn, rounds int) error {
	t.Helper()
	batch := [][]byte{[]byte("PRIVMSG #a :hello\r\n"), []byte("PRIVMSG #a :world\r\n")}
	var writers sync.WaitGroup
	started := make(chan struct{}, 4)
	for range 4 {
		writers.Go(func() {
			started <- struct{}{}
			for range rounds {
				if err := conn.WriteLines(batch); err != nil {
					return
				}
			}
		})
	}
	for range 4 {
		<-started
	}
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	writers.Wait()
	return conn.WriteLines(batch)
}

func TestStreamConnWritesAreNotInterleaved(t *testing.T) {
	server, client := loopbackPair(t)
	conn := NewStreamConn(server, KindTCP)
	const writers, batches = 4, 200
	var wg sync.WaitGroup
	for w := range writers {
		line := []byte(strings.Repeat(string(rune('a'+w)), 300) + "\r\n")
		wg.Go(func() {
			for range batches {
				if err := conn.WriteLines([][]byte{line, line}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	go func() { wg.Wait(); conn.Close() }()
	scanner := bufio.NewScanner(client)
	count := 0
	for scanner.Scan() {
		line := bytes.TrimSuffix(scanner.Bytes(), []byte("\r"))
		if len(line) != 300 || bytes.Count(line, line[:1]) != 300 {
			t.Fatalf("interleaved line %q", line)
		}
		count++
	}
	if count != writers*batches*2 {
		t.Fatalf("read %d lines, want %d", count, writers*batches*2)
	}
}

func TestStreamConnKindAndAddr(t *testing.T) {
	server, client := loopbackPair(t)
	conn := NewStreamConn(server, KindTLS)
	if conn.Kind() != KindTLS {
		t.Fatalf("Kind = %q", conn.Kind())
	}
	if conn.RemoteAddr().String() != client.LocalAddr().String() {
		t.Fatalf("RemoteAddr = %v, want %v", conn.RemoteAddr(), client.LocalAddr())
	}
}
