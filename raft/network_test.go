package raft

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// TestInmemConnBehavesLikeTCP: writes to a peer that does not read return at once, data written
// before Close still reaches a peer that reads, Close (also a TLS connection's, which writes a
// close alert) never waits for the peer, and this end's blocked reads end at Close.
func TestInmemConnBehavesLikeTCP(t *testing.T) {
	network := NewInmemNetwork()
	network.mu.Lock()
	local, remote := network.pipeLocked("a", "b")
	network.mu.Unlock()
	for i := range 100 {
		if _, err := local.Write(make([]byte, 1024)); err != nil {
			t.Fatalf("write %d to a peer not reading: %v", i, err)
		}
	}
	if _, err := local.Write([]byte("last")); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := local.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(began); d > 100*time.Millisecond {
		t.Fatalf("Close waited %v for a peer that does not read", d)
	}
	remote.SetReadDeadline(time.Now().Add(testTimeout))
	got, err := io.ReadAll(remote)
	if err != nil || len(got) != 100*1024+4 || string(got[len(got)-4:]) != "last" {
		t.Fatalf("peer read %d bytes (%v), want everything written before Close", len(got), err)
	}

	// TLS over the pipe: closing both ends while neither reads returns at once.
	id := testIdentity(t, "a")
	network.mu.Lock()
	rawClient, rawServer := network.pipeLocked("a", "b")
	network.mu.Unlock()
	server := tls.Server(rawServer, id.ServerConfig(alpnRPC))
	client := tls.Client(rawClient, id.ClientConfig(alpnRPC, "a"))
	done := make(chan error, 1)
	go func() { done <- server.Handshake() }()
	if err := client.Handshake(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	reading := make(chan error, 1)
	go func() {
		_, err := server.Read(make([]byte, 1))
		reading <- err
	}()
	began = time.Now()
	client.Close()
	server.Close()
	if d := time.Since(began); d > time.Second {
		t.Fatalf("closing TLS over the pipe took %v", d)
	}
	select {
	case err := <-reading:
		if err == nil {
			t.Fatal("a read on a closed connection returned data")
		}
	case <-time.After(testTimeout):
		t.Fatal("a blocked read outlived Close")
	}
	if _, err := server.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("write after Close = %v", err)
	}
}
