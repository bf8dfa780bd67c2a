package irctest

import (
	"strings"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// IsFrom reports whether m's source is nick (nick!user@host or a bare nick).
func IsFrom(m ircmsg.Message, nick string) bool {
	src, _, _ := strings.Cut(m.Source, "!")
	return strings.EqualFold(src, nick)
}

// ParamsContain reports whether m's parameters, joined by spaces, contain every want string.
func ParamsContain(m ircmsg.Message, want ...string) bool {
	joined := strings.Join(m.Params, " ")
	for _, w := range want {
		if !strings.Contains(joined, w) {
			return false
		}
	}
	return true
}

// FindMsg returns the first message with command whose parameters contain every want string.
func FindMsg(msgs []ircmsg.Message, command string, want ...string) (ircmsg.Message, bool) {
	for _, m := range msgs {
		if m.Command == command && ParamsContain(m, want...) {
			return m, true
		}
	}
	return ircmsg.Message{}, false
}

// Commands returns the command of each message.
func Commands(msgs []ircmsg.Message) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, m.Command)
	}
	return out
}

// Texts returns the last parameter of each PRIVMSG and NOTICE.
func Texts(msgs []ircmsg.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Command == "PRIVMSG" || m.Command == "NOTICE" {
			out = append(out, m.Param(len(m.Params)-1))
		}
	}
	return out
}

// Lines renders messages, one string each.
func Lines(msgs []ircmsg.Message) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, m.String())
	}
	return out
}
