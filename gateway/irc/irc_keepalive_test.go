package irc_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestKeepalive: an idle client is pinged; one that answers stays connected, one that does not is
// closed with a Ping timeout and leaves its channels.
func TestKeepalive(t *testing.T) {
	n := startNode(t, t.TempDir(), func(c *Config) {
		c.PingAfter, c.PingTimeout = 200*time.Millisecond, 400*time.Millisecond
	})
	silent, _ := guest(t, n, "silent")
	responder, _ := guest(t, n, "responder")
	silent.Send("JOIN #idle")
	responder.Send("JOIN #idle")

	// The responder answers every PING from the start; it must see silent quit for a Ping timeout
	// and then be pinged again, which only happens on a connection the server kept.
	done := make(chan error, 1)
	go func() {
		sawQuit := false
		for {
			m, err := responder.ReadMessage(testCtx(t))
			if err != nil {
				done <- fmt.Errorf("responder: %w (saw quit: %v)", err, sawQuit)
				return
			}
			switch {
			case m.Command == "PING":
				responder.Send("PONG :" + m.Param(0))
				if sawQuit {
					done <- nil
					return
				}
			case m.Command == "QUIT" && strings.HasPrefix(m.Source, "silent!"):
				if !strings.Contains(m.Param(0), "Ping timeout") {
					done <- fmt.Errorf("quit reason %q", m.Param(0))
					return
				}
				sawQuit = true
			}
		}
	}()
	ping := expect(t, silent, "PING")
	if ping.Param(0) != "palaver.test" {
		t.Fatalf("server ping %q", ping.String())
	}
	expect(t, silent, "ERROR", "Ping timeout")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
