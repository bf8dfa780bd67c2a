package irc_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// TestIRCJoinHistory: --join-history n replays the n latest messages to a client without
// draft/chathistory when it joins; 0 (and -1) replays none.
func TestIRCJoinHistory(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want []string
	}{
		{0, nil},
		{-1, nil},
		{2, []string{"line 2", "line 3"}},
	} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			n := startNode(t, t.TempDir(), func(c *Config) { c.JoinHistory = tc.n })
			speaker, _ := guest(t, n, "speaker", "echo-message")
			joinChannels(t, speaker, "#replay")
			for i := 1; i <= 3; i++ {
				sendLines(t, speaker, fmt.Sprintf("PRIVMSG #replay :line %d", i))
				expect(t, speaker, "PRIVMSG", fmt.Sprintf("line %d", i))
			}
			late, _ := guest(t, n, "latecomer", "batch", "server-time", "message-tags")
			sendLines(t, late, "JOIN #replay", "PING :replayed")
			msgs := readUntil(t, late, "the PONG", func(m ircmsg.Message) bool { return m.Command == "PONG" && m.Param(1) == "replayed" })
			var got []string
			for _, m := range msgs {
				if m.Command == "PRIVMSG" {
					got = append(got, m.Param(1))
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("join replay %q, want %q", got, tc.want)
			}
		})
	}
}
