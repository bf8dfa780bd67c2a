package load

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// ErrRefused reports a server reply that ends the step in progress (ERROR,
// a refused nick, a failed SASL exchange, a refused JOIN, CAP NAK).
var ErrRefused = errors.New("load: the server refused")

// The numerics that end each step.
var (
	registrationFailures = []string{"431", "432", "433", "436", "437", "465"}
	joinFailures         = []string{"403", "405", "471", "473", "474", "475", "476", "477"}
	saslFailures         = []string{"902", "904", "905", "906", "907", "908"}
)

// readUntil reads messages until match accepts one, which it returns. It
// answers PING on the way, skips unparsable lines, and fails with
// ErrRefused on ERROR or on a command listed in fail.
func readUntil(ctx context.Context, c lineConn, fail []string, match func(ircmsg.Message) bool) (ircmsg.Message, error) {
	for {
		line, err := c.readLine(ctx)
		if err != nil {
			return ircmsg.Message{}, err
		}
		msg, err := ircmsg.Parse(line)
		if err != nil {
			continue
		}
		switch {
		case msg.Command == "PING":
			if err := c.writeLines(ctx, pong(msg)); err != nil {
				return msg, err
			}
			continue
		case msg.Command == "ERROR", slices.Contains(fail, msg.Command):
			return msg, fmt.Errorf("%w: %s", ErrRefused, line)
		}
		if match(msg) {
			return msg, nil
		}
	}
}

func pong(ping ircmsg.Message) string {
	return ircmsg.Message{Command: "PONG", Params: ping.Params}.String()
}

// isCommand matches messages with the given command.
func isCommand(cmd string) func(ircmsg.Message) bool {
	return func(m ircmsg.Message) bool { return m.Command == cmd }
}

// randomTag returns n random hex digits; it keeps the nicks and channels
// of one benchmark apart from those of earlier runs on the same server.
func randomTag(n int) string {
	b := make([]byte, (n+1)/2)
	_, _ = rand.Read(b) // never fails since Go 1.24
	return hex.EncodeToString(b)[:n]
}

// isTimeout says whether err is a deadline that passed.
func isTimeout(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded)
}
