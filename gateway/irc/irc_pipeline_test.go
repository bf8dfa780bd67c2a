package irc_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// TestIRCPipelinedMessagesKeepOrder sends a burst of channel messages, DMs and state changes
// without waiting for replies (the server stores a connection's messages in a pipeline) and
// checks that the sender's replies, the other member's view and the stored history all keep the
// order of the commands, and that messages sent right before QUIT are all delivered.
func TestIRCPipelinedMessagesKeepOrder(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	sender, _ := guest(t, n, "piper", "echo-message", "labeled-response", "batch", "message-tags")
	watcher, _ := guest(t, n, "watcher")
	joinChannels(t, sender, "#pipe")
	joinChannels(t, watcher, "#pipe")
	expectFrom(t, sender, "watcher", "JOIN")

	// The command sequence and what each produces: for the sender, its echo (or reply) in order;
	// for the watcher, what it sees.
	var burst, senderWant, watcherWant []string
	for i := range 120 {
		switch {
		case i%40 == 39:
			topic := fmt.Sprintf("topic-%d", i)
			burst = append(burst, fmt.Sprintf("@label=L%d TOPIC #pipe :%s", i, topic))
			senderWant = append(senderWant, fmt.Sprintf("L%d TOPIC %s", i, topic))
			watcherWant = append(watcherWant, "TOPIC "+topic)
		case i%10 == 7:
			text := fmt.Sprintf("dm-%d", i)
			burst = append(burst, fmt.Sprintf("@label=L%d PRIVMSG watcher :%s", i, text))
			senderWant = append(senderWant, fmt.Sprintf("L%d PRIVMSG %s", i, text))
			watcherWant = append(watcherWant, "PRIVMSG "+text)
		case i%25 == 13:
			burst = append(burst, fmt.Sprintf("@label=L%d PRIVMSG #nowhere :lost-%d", i, i))
			senderWant = append(senderWant, fmt.Sprintf("L%d 403 No such channel", i))
		default:
			text := fmt.Sprintf("msg-%d", i)
			burst = append(burst, fmt.Sprintf("@label=L%d PRIVMSG #pipe :%s", i, text))
			senderWant = append(senderWant, fmt.Sprintf("L%d PRIVMSG %s", i, text))
			watcherWant = append(watcherWant, "PRIVMSG "+text)
		}
	}
	sendLines(t, sender, burst...)

	var senderGot []string
	readUntil(t, sender, "the last labeled reply", func(m ircmsg.Message) bool {
		label := m.Tags["label"]
		if label == "" {
			return false
		}
		senderGot = append(senderGot, label+" "+m.Command+" "+m.Param(len(m.Params)-1))
		return len(senderGot) == len(senderWant)
	})
	if !slices.Equal(senderGot, senderWant) {
		t.Errorf("sender's replies out of order:\n got %q\nwant %q", senderGot, senderWant)
	}

	var watcherGot []string
	readUntil(t, watcher, "the burst", func(m ircmsg.Message) bool {
		if !isFrom(m, "piper") || (m.Command != "PRIVMSG" && m.Command != "TOPIC") {
			return false
		}
		watcherGot = append(watcherGot, m.Command+" "+m.Param(len(m.Params)-1))
		return len(watcherGot) == len(watcherWant)
	})
	if !slices.Equal(watcherGot, watcherWant) {
		t.Errorf("watcher saw the burst out of order:\n got %q\nwant %q", watcherGot, watcherWant)
	}

	storedTexts := channelTexts(t, n, "#pipe")
	var wantStored []string
	for _, w := range watcherWant {
		if text, ok := strings.CutPrefix(w, "PRIVMSG msg-"); ok {
			wantStored = append(wantStored, "msg-"+text)
		}
	}
	if !slices.Equal(storedTexts, wantStored) {
		t.Errorf("history order:\n got %q\nwant %q", storedTexts, wantStored)
	}

	// Messages read before a QUIT are stored and delivered before the session ends.
	var last []string
	for i := range 40 {
		last = append(last, fmt.Sprintf("PRIVMSG #pipe :bye-%d", i))
	}
	sendLines(t, sender, append(last, "QUIT :done")...)
	var got []string
	readUntil(t, watcher, "piper's QUIT", func(m ircmsg.Message) bool {
		if !isFrom(m, "piper") {
			return false
		}
		if m.Command == "PRIVMSG" {
			got = append(got, m.Param(1))
		}
		return m.Command == "QUIT"
	})
	if len(got) != 40 || got[0] != "bye-0" || got[39] != "bye-39" {
		t.Errorf("before the QUIT the watcher saw %q", got)
	}
}
