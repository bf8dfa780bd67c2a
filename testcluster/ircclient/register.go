package ircclient

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// ErrRegistrationFailed reports that the server refused registration or a
// capability request (433, 432, CAP NAK, ERROR, ...).
var ErrRegistrationFailed = errors.New("ircclient: registration failed")

// Register negotiates capabilities and registers as nick: CAP LS 302,
// CAP REQ for caps (if any), NICK, USER, CAP END, then waits for 001, which
// it returns. 433, 432, a CAP NAK or ERROR give an error wrapping
// ErrRegistrationFailed.
func (c *Client) Register(ctx context.Context, nick string, caps ...string) (ircmsg.Message, error) {
	if err := c.negotiateCaps(ctx, caps, nil); err != nil {
		return ircmsg.Message{}, err
	}
	if err := c.sendUser(nick); err != nil {
		return ircmsg.Message{}, err
	}
	return c.finishRegistration(ctx, nil)
}

// negotiateCaps sends CAP LS 302, reads the (possibly multi-line) LS reply
// and, when caps is not empty, requests them all and waits for the ACK.
// Every line read is appended to *lines when lines is not nil.
func (c *Client) negotiateCaps(ctx context.Context, caps []string, lines *[]ircmsg.Message) error {
	if err := c.Send("CAP LS 302"); err != nil {
		return err
	}
	for {
		msg, err := c.expectRegistrationReply(ctx, lines, "CAP")
		if err != nil {
			return fmt.Errorf("ircclient: waiting for CAP LS: %w", err)
		}
		if strings.EqualFold(msg.Param(1), "LS") && msg.Param(2) != "*" {
			break
		}
	}
	if len(caps) == 0 {
		return nil
	}
	if err := c.Send("CAP REQ :" + strings.Join(caps, " ")); err != nil {
		return err
	}
	for {
		msg, err := c.expectRegistrationReply(ctx, lines, "CAP")
		if err != nil {
			return fmt.Errorf("ircclient: waiting for CAP ACK: %w", err)
		}
		switch strings.ToUpper(msg.Param(1)) {
		case "ACK":
			return nil
		case "NAK":
			return fmt.Errorf("%w: server refused capabilities %q", ErrRegistrationFailed, msg.Param(2))
		}
	}
}

func (c *Client) sendUser(nick string) error {
	if err := c.Send("NICK " + nick); err != nil {
		return err
	}
	return c.Send("USER " + nick + " 0 * :" + nick)
}

// finishRegistration sends CAP END and waits for 001.
func (c *Client) finishRegistration(ctx context.Context, lines *[]ircmsg.Message) (ircmsg.Message, error) {
	if err := c.Send("CAP END"); err != nil {
		return ircmsg.Message{}, err
	}
	welcome, err := c.expectRegistrationReply(ctx, lines, "001")
	if err != nil {
		return ircmsg.Message{}, fmt.Errorf("ircclient: waiting for 001: %w", err)
	}
	return welcome, nil
}

// expectRegistrationReply reads until a message with command want arrives,
// answering PINGs and failing on the replies that end a registration.
func (c *Client) expectRegistrationReply(ctx context.Context, lines *[]ircmsg.Message, want string) (ircmsg.Message, error) {
	for {
		msg, err := c.ReadMessage(ctx)
		if err != nil {
			return ircmsg.Message{}, err
		}
		if lines != nil {
			*lines = append(*lines, msg)
		}
		switch msg.Command {
		case want:
			return msg, nil
		case "PING":
			if err := c.pong(msg); err != nil {
				return ircmsg.Message{}, err
			}
		case "432", "433", "436", "437", "465", "ERROR":
			return ircmsg.Message{}, fmt.Errorf("%w: %s", ErrRegistrationFailed, msg.String())
		}
	}
}

func (c *Client) pong(ping ircmsg.Message) error {
	return c.Send(ircmsg.Message{Command: "PONG", Params: ping.Params}.String())
}

// Hold keeps the session alive, answering PING with PONG and discarding
// everything else (it stays in Seen), until ctx ends (returns nil) or the
// connection fails or closes (returns that error, io.EOF for a close).
func (c *Client) Hold(ctx context.Context) error {
	for {
		msg, err := c.ReadMessage(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, ErrLineTooLong), errors.Is(err, ircmsg.ErrMalformed):
			continue
		case err != nil:
			return err
		case msg.Command == "PING":
			if err := c.pong(msg); err != nil {
				return err
			}
		}
	}
}
