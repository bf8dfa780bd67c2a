package ircclient

import (
	"errors"
	"testing"
)

func TestRegister(t *testing.T) {
	addr := startFakeServer(t, func(fc *fakeConn) {
		fc.expect("CAP LS 302")
		fc.send(":srv CAP * LS * :sasl=ATPROTO-CHALLENGE message-tags", ":srv CAP * LS :server-time echo-message")
		fc.expect("CAP REQ :message-tags server-time")
		fc.send(":srv CAP * ACK :message-tags server-time")
		fc.expect("NICK alice")
		fc.expect("USER alice 0 * :alice")
		fc.expect("CAP END")
		fc.send("PING :reg")
		fc.expect("PONG reg")
		fc.send(":srv 001 alice :Welcome to srv, alice (guest)")
	})
	c := dialTest(t, addr)
	welcome, err := c.Register(testContext(t), "alice", "message-tags", "server-time")
	if err != nil {
		t.Fatal(err)
	}
	if welcome.Command != "001" || welcome.Param(0) != "alice" {
		t.Errorf("welcome = %v", welcome)
	}
}

func TestRegisterWithoutCaps(t *testing.T) {
	addr := startFakeServer(t, func(fc *fakeConn) {
		fc.expect("CAP LS 302")
		fc.send(":srv CAP * LS :sasl")
		fc.expect("NICK bob")
		fc.expect("USER bob 0 * :bob")
		fc.expect("CAP END")
		fc.send(":srv 001 bob :Welcome")
	})
	c := dialTest(t, addr)
	if _, err := c.Register(testContext(t), "bob"); err != nil {
		t.Fatal(err)
	}
}

func TestRegisterFailures(t *testing.T) {
	tests := []struct {
		name   string
		script func(fc *fakeConn)
	}{
		{"nick in use", func(fc *fakeConn) {
			fc.expect("CAP LS 302")
			fc.send(":srv CAP * LS :message-tags")
			fc.readLine() // CAP REQ
			fc.send(":srv CAP * ACK :message-tags")
			fc.readLine() // NICK
			fc.readLine() // USER
			fc.readLine() // CAP END
			fc.send(":srv 433 * taken :Nickname is already in use")
		}},
		{"erroneous nick", func(fc *fakeConn) {
			fc.expect("CAP LS 302")
			fc.send(":srv CAP * LS :message-tags")
			fc.readLine()
			fc.send(":srv CAP * ACK :message-tags")
			fc.readLine()
			fc.readLine()
			fc.readLine()
			fc.send(":srv 432 * taken :Erroneous nickname")
		}},
		{"cap refused", func(fc *fakeConn) {
			fc.expect("CAP LS 302")
			fc.send(":srv CAP * LS :message-tags")
			fc.readLine()
			fc.send(":srv CAP * NAK :message-tags")
		}},
		{"error line", func(fc *fakeConn) {
			fc.expect("CAP LS 302")
			fc.send("ERROR :This server requires authentication")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := startFakeServer(t, tt.script)
			c := dialTest(t, addr)
			_, err := c.Register(testContext(t), "taken", "message-tags")
			if !errors.Is(err, ErrRegistrationFailed) {
				t.Fatalf("Register err = %v, want ErrRegistrationFailed", err)
			}
		})
	}
}
