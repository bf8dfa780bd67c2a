package load

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// plainCaps are the IRCv3 capabilities a plain-IRC scenario asks for when
// the server offers them; none is required.
var plainCaps = []string{"message-tags", "server-time", "account-tag"}

// registerPlain registers as a guest with NICK/USER on any RFC 1459 or
// IRCv3 server: it sends CAP LS 302 along with NICK and USER, and when the
// server answers with a capability list it requests those of want (and of
// plainCaps) that are offered and ends negotiation; a server without CAP
// registers straight away. It returns the capabilities acknowledged.
func registerPlain(ctx context.Context, conn lineConn, nick string, want ...string) ([]string, error) {
	if err := conn.writeLines(ctx, "CAP LS 302", "NICK "+nick, "USER "+nick+" 0 * :"+nick); err != nil {
		return nil, err
	}
	var offered, acked []string
	requested := false
	for {
		m, err := readUntil(ctx, conn, registrationFailures, func(m ircmsg.Message) bool {
			return m.Command == "001" || m.Command == "CAP"
		})
		if err != nil {
			return nil, fmt.Errorf("registering as %s: %w", nick, err)
		}
		if m.Command == "001" {
			return acked, nil
		}
		switch sub := strings.ToUpper(m.Param(1)); sub {
		case "LS":
			more := m.Param(2) == "*"
			list := m.Param(len(m.Params) - 1)
			for _, c := range strings.Fields(list) {
				name, _, _ := strings.Cut(c, "=")
				offered = append(offered, name)
			}
			if more || requested {
				continue
			}
			requested = true
			var req []string
			for _, c := range append(slices.Clone(want), plainCaps...) {
				if slices.Contains(offered, c) && !slices.Contains(req, c) {
					req = append(req, c)
				}
			}
			lines := []string{"CAP END"}
			if len(req) > 0 {
				lines = []string{"CAP REQ :" + strings.Join(req, " ")}
			}
			if err := conn.writeLines(ctx, lines...); err != nil {
				return nil, err
			}
		case "ACK":
			acked = append(acked, strings.Fields(m.Param(len(m.Params)-1))...)
			if err := conn.writeLines(ctx, "CAP END"); err != nil {
				return nil, err
			}
		case "NAK":
			if err := conn.writeLines(ctx, "CAP END"); err != nil {
				return nil, err
			}
		}
	}
}

// joinChannel joins channel and waits for the end of its NAMES (366).
func joinChannel(ctx context.Context, conn lineConn, channel string) error {
	if err := conn.writeLines(ctx, "JOIN "+channel); err != nil {
		return err
	}
	if _, err := readUntil(ctx, conn, joinFailures, isCommand("366")); err != nil {
		return fmt.Errorf("joining %s: %w", channel, err)
	}
	return nil
}
