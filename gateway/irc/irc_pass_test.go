package irc_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// TestIRCConnectionPassword follows PASS (RFC 2812 3.1.1, modern IRC): with a connection
// password configured, PASS with it before NICK and USER registers; no PASS, or another
// password, gets 464 and ERROR and no 001; PASS after registration is 462.
func TestIRCConnectionPassword(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "irc-password")
	if err := os.WriteFile(file, []byte("sesame\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := startNode(t, filepath.Join(dir, "node"), func(c *Config) { c.IRCPasswordFile = file })

	right := dial(t, n)
	sendLines(t, right, "PASS sesame")
	if _, err := right.Register(testCtx(t), "passright"); err != nil {
		t.Fatalf("register with the password: %v", err)
	}
	sendLines(t, right, "PASS sesame")
	expect(t, right, "462")

	for _, tc := range []struct{ name, pass string }{{"no PASS", ""}, {"another password", "PASS sesame2"}} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, n)
			if tc.pass != "" {
				sendLines(t, c, tc.pass)
			}
			sendLines(t, c, "NICK passwrong", "USER u 0 * :r")
			msgs := readUntil(t, c, "ERROR", func(m ircmsg.Message) bool { return m.Command == "ERROR" })
			refuteMsg(t, msgs, "001")
			if _, ok := findMsg(msgs, "464"); !ok {
				t.Fatalf("no 464: %v", lines(msgs))
			}
		})
	}
}
