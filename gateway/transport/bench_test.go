package transport

import (
	"fmt"
	"io"
	"net"
	"testing"
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
	for _, bc := range []struct {
		name           string
		server, client net.Conn
	}{
		{"loopback-tcp-vectored", tcpServer, tcpClient},
		{"pipe-coalesced", pipeServer, pipeClient},
	} {
		b.Run(bc.name, func(b *testing.B) {
			go io.Copy(io.Discard, bc.client)
			conn := NewStreamConn(bc.server, KindTCP)
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				if err := conn.WriteLines(lines); err != nil {
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
