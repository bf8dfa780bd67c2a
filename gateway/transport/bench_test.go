package transport

import (
	"context"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/coder/websocket"
)

// benchBatch is 64 typical channel lines of about 100 bytes.
func benchBatch() ([][]byte, int64) {
	lines := make([][]byte, 64)
	var size int64
	for i := range lines {
		lines[i] = fmt.Appendf(nil, "@time=2025-01-01T00:00:00.000Z :nick%02d!u@h PRIVMSG #palaver :message number %02d of the batch\r\n", i, i)
		size += int64(len(lines[i]))
	}
	return lines, size
}

func BenchmarkWriteLines(b *testing.B) {
	lines, size := benchBatch()
	pipeServer, pipeClient := net.Pipe()
	tcpServer, tcpClient := loopbackPair(b)
	oneServer, oneClient := loopbackPair(b)
	for _, bc := range []struct {
		name           string
		server, client net.Conn
		lines          [][]byte // default: the whole batch
	}{
		{"loopback-tcp-batch", tcpServer, tcpClient, nil},
		{"pipe-batch", pipeServer, pipeClient, nil},
		// One line per write: a fan-out delivery to a connection that keeps up.
		{"loopback-tcp-one-line", oneServer, oneClient, lines[:1]},
	} {
		b.Run(bc.name, func(b *testing.B) {
			go io.Copy(io.Discard, bc.client)
			conn := NewStreamConn(bc.server, KindTCP)
			batch, bytes := lines, size
			if bc.lines != nil {
				batch, bytes = bc.lines, int64(len(bc.lines[0]))
			}
			b.SetBytes(bytes)
			b.ReportAllocs()
			for b.Loop() {
				if err := conn.WriteLines(batch); err != nil {
					b.Fatal(err)
				}
			}
			conn.Close()
		})
	}
}

func BenchmarkReadLine(b *testing.B) {
	lines, size := benchBatch()
	server, client := loopbackPair(b)
	go func() {
		w := NewStreamConn(client, KindTCP)
		for w.WriteLines(lines) == nil {
		}
	}()
	conn := NewStreamConn(server, KindTCP)
	b.SetBytes(size / int64(len(lines)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := conn.ReadLine(); err != nil {
			b.Fatal(err)
		}
	}
	conn.Close()
}

// BenchmarkWebSocket reads and writes typical lines over a loopback WebSocket, accepted either
// way (see wsAccepts): the cost per line of the short-lived reading goroutine and of gathering
// frames beneath the library.
func BenchmarkWebSocket(b *testing.B) {
	lines, _ := benchBatch()
	for _, a := range wsAccepts {
		b.Run("ReadLine/"+a.name, func(b *testing.B) {
			conn, client := wsPair(b, a.accept)
			ctx := context.Background()
			go func() {
				for i := 0; client.Write(ctx, websocket.MessageText, lines[i%len(lines)]) == nil; i++ {
				}
			}()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := conn.ReadLine(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("WriteLines-one-line/"+a.name, func(b *testing.B) {
			conn, client := wsPair(b, a.accept)
			go func() {
				for {
					if _, _, err := client.Read(context.Background()); err != nil {
						return
					}
				}
			}()
			b.ReportAllocs()
			for b.Loop() {
				if err := conn.WriteLines(lines[:1]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
