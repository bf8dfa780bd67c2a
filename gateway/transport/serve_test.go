package transport

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// echoHandler writes every line back, prefixed with the transport kind.
func echoHandler(c Conn) {
	for {
		line, err := c.ReadLine()
		if errors.Is(err, ErrLineTooLong) {
			continue
		}
		if err != nil {
			return
		}
		if err := c.WriteLines([][]byte{[]byte(c.Kind() + " " + string(line) + "\r\n")}); err != nil {
			return
		}
	}
}

// startServe runs Serve in the background and returns a stop function that
// cancels it and waits for it to return.
func startServe(t *testing.T, ln net.Listener, kind string, limiter *IPLimiter) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, kind, limiter, echoHandler) }()
	stopped := false
	var result error
	stop = func() error {
		if stopped {
			return result
		}
		stopped = true
		cancel()
		select {
		case result = <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("Serve did not return after cancel")
		}
		return result
	}
	t.Cleanup(func() { stop() })
	return stop
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, line, want string) {
	t.Helper()
	if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte(line + "\r\n")); err != nil {
		t.Fatal(err)
	}
	got, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if got != want+"\r\n" {
		t.Fatalf("got %q, want %q", got, want+"\r\n")
	}
}

func TestServeLimitsConnectionsPerIP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := startServe(t, ln, KindTCP, NewIPLimiter(2))

	var admitted []net.Conn
	for i := range 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		roundTrip(t, c, bufio.NewReader(c), "PING "+string(rune('a'+i)), "tcp PING "+string(rune('a'+i)))
		admitted = append(admitted, c)
	}

	refused, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer refused.Close()
	refused.SetDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(refused)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(rejectLine) {
		t.Fatalf("refused connection got %q", got)
	}

	// Closing an admitted connection frees its slot.
	admitted[0].Close()
	r := bufio.NewReader(admitted[1])
	roundTrip(t, admitted[1], r, "STILL", "tcp STILL")
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		c.Write([]byte("AGAIN\r\n"))
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if line == "tcp AGAIN\r\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slot never freed; last answer %q", line)
		}
	}

	if err := stop(); err != nil {
		t.Fatalf("Serve returned %v", err)
	}
	// Stopping closed the remaining connection.
	admitted[1].SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := r.ReadString('\n'); err != io.EOF {
		t.Fatalf("connection after stop: %v, want EOF", err)
	}
}

func TestServeReturnsWhenListenerClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Serve(context.Background(), ln, KindTCP, nil, echoHandler) }()
	ln.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve = %v, want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return")
	}
}

func TestServeTLS(t *testing.T) {
	cert, err := LoadOrCreateCertificate(t.TempDir(), "", "", []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := tls.NewListener(inner, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	startServe(t, ln, KindTLS, NewIPLimiter(20))

	roots := x509.NewCertPool()
	roots.AddCert(cert.Leaf)
	c, err := tls.Dial("tcp", inner.Addr().String(), &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	roundTrip(t, c, bufio.NewReader(c), "CAP LS 302", "tls CAP LS 302")
}
