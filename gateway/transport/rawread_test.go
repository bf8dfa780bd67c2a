//go:build unix

package transport

import (
	"errors"
	"io"
	"testing"
)

func TestRawReaderReadFresh(t *testing.T) {
	tests := []struct {
		name    string
		send    string
		closeIt bool
		wantN   int
		wantErr error
	}{
		{"input waiting", "PING :x\r\n", false, 9, nil},
		{"peer closed", "", true, 0, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server, client := loopbackPair(t)
			r, ok := newRawReader(server).(*rawReader)
			if !ok {
				t.Fatal("no RawConn on a TCP connection")
			}
			if tt.send != "" {
				if _, err := client.Write([]byte(tt.send)); err != nil {
					t.Fatal(err)
				}
			}
			if tt.closeIt {
				client.Close()
			}
			buf, n, err := r.readFresh()
			if n != tt.wantN || !errors.Is(err, tt.wantErr) {
				t.Fatalf("readFresh = %d, %v; want %d, %v", n, err, tt.wantN, tt.wantErr)
			}
			if n == 0 {
				if buf != nil || r.lent != nil {
					t.Fatal("a read that returned nothing kept a buffer")
				}
				return
			}
			if len(buf) != initialLineBuffer || string(buf[:n]) != tt.send {
				t.Fatalf("buffer of %d bytes holds %q", len(buf), buf[:n])
			}
			r.release(buf)
			if r.lent != nil {
				t.Fatal("release kept the buffer lent")
			}
		})
	}
}
