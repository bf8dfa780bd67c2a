package testcluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// errRefused is an answer that means the server did nothing (a numeric error or a FAIL that says
// so): the operation failed for certain.
var errRefused = errors.New("refused")

// errUnavailable is FAIL ... TEMPORARILY_UNAVAILABLE: the proposal failed or timed out, and may
// still have been applied.
var errUnavailable = errors.New("temporarily unavailable")

// await reads messages until handle reports done or fails, answering PINGs; observe (when not
// nil) sees every message first. It gives up after timeout.
func await(ctx context.Context, cl *ircclient.Client, timeout time.Duration, observe func(ircmsg.Message), handle func(ircmsg.Message) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		m, err := cl.ReadMessage(ctx)
		switch {
		case errors.Is(err, ircclient.ErrLineTooLong), errors.Is(err, ircmsg.ErrMalformed):
			continue
		case err != nil:
			return err
		}
		if m.Command == "PING" {
			if err := cl.Send(ircmsg.Message{Command: "PONG", Params: m.Params}.String()); err != nil {
				return err
			}
			continue
		}
		if observe != nil {
			observe(m)
		}
		done, err := handle(m)
		if err != nil || done {
			return err
		}
	}
}

// nickOf is the nick of a nick!user@host source.
func nickOf(source string) string {
	nick, _, _ := strings.Cut(source, "!")
	return nick
}

// failOf classifies a FAIL line for command: errUnavailable, errRefused, or nil when it is not
// a FAIL for that command.
func failOf(m ircmsg.Message, command string) error {
	if m.Command != "FAIL" || (m.Param(0) != command && m.Param(0) != "*") {
		return nil
	}
	if m.Param(1) == "TEMPORARILY_UNAVAILABLE" {
		return fmt.Errorf("%w: %s", errUnavailable, m.String())
	}
	return fmt.Errorf("%w: %s", errRefused, m.String())
}

// joinChannel joins channel and waits for the end of its NAMES list.
func joinChannel(ctx context.Context, cl *ircclient.Client, channel string, observe func(ircmsg.Message)) error {
	if err := cl.Send("JOIN " + channel); err != nil {
		return err
	}
	return await(ctx, cl, 20*time.Second, observe, func(m ircmsg.Message) (bool, error) {
		switch m.Command {
		case "366":
			return m.Param(1) == channel, nil
		case "403", "405", "471", "473", "474", "475", "479":
			return false, fmt.Errorf("join %s: %w: %s", channel, errRefused, m.String())
		}
		return false, failOf(m, "JOIN")
	})
}
