package irc_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
	"github.com/palaver-chat/palaver/testcluster/poll"
)

// playbackCaps are the capabilities of a draft/event-playback history reader.
var playbackCaps = append(slices.Clone(historyCaps), "draft/event-playback")

// historyLine renders a history line without its batch tag: time, msgid, source, command, params.
func historyLine(m ircmsg.Message) string {
	return fmt.Sprintf("%s %s :%s %s %s", m.Tags["time"], m.Tags["msgid"], m.Source, m.Command, strings.Join(m.Params, " "))
}

// shape is a history line's command and parameters, with the source's nick.
func shape(m ircmsg.Message) string {
	nick, _, _ := strings.Cut(m.Source, "!")
	return nick + " " + m.Command + " " + strings.Join(m.Params, " ")
}

func shapes(msgs []ircmsg.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = shape(m)
	}
	return out
}

// historyUntil repeats a CHATHISTORY command until its batch holds want lines (events are filed
// by each node's own subscriber to the applied log, a moment after the change was shown live).
func historyUntil(t *testing.T, c *ircclient.Client, command, target string, want int) []ircmsg.Message {
	t.Helper()
	var got []ircmsg.Message
	poll.Until(t, fmt.Sprintf("%d lines of %s", want, command), func() bool {
		got = historyBatch(t, c, command, target)
		return len(got) >= want
	})
	return got
}

// TestIRCEventPlayback: with draft/event-playback a channel's history holds its JOIN, TOPIC,
// MODE, NICK, KICK, PART and QUIT lines with a time and a msgid, in order with its messages, in
// every CHATHISTORY subcommand and in the replay after JOIN; without the capability, and on the
// REST routes, the history is the messages alone.
func TestIRCEventPlayback(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	alice, _ := login(t, n, "pbalice", playbackCaps...)
	plain, _ := guest(t, n, "pbplain", append(slices.Clone(historyCaps), "message-tags")...)
	bob, _ := guest(t, n, "pbbob")
	carol, _ := guest(t, n, "pbcarol")

	joinChannels(t, alice, "#pb")
	joinChannels(t, plain, "#pb")
	sendLines(t, alice, "TOPIC #pb :the topic")
	expectFrom(t, alice, "pbalice", "TOPIC", "#pb", "the topic")
	joinChannels(t, bob, "#pb")
	sendLines(t, alice, "PRIVMSG #pb :first")
	expectFrom(t, alice, "pbalice", "PRIVMSG", "#pb", "first")
	sendLines(t, alice, "MODE #pb +v pbbob")
	expectFrom(t, alice, "pbalice", "MODE", "#pb", "+v", "pbbob")
	sendLines(t, bob, "NICK pbbob2")
	expectFrom(t, alice, "pbbob", "NICK", "pbbob2")
	sendLines(t, alice, "KICK #pb pbbob2 :out")
	expectFrom(t, alice, "pbalice", "KICK", "#pb", "pbbob2", "out")
	joinChannels(t, carol, "#pb")
	sendLines(t, carol, "PART #pb :bye")
	expectFrom(t, alice, "pbcarol", "PART", "#pb", "bye")
	joinChannels(t, carol, "#pb")
	sendLines(t, alice, "PRIVMSG #pb :second")
	expectFrom(t, alice, "pbalice", "PRIVMSG", "#pb", "second")
	sendLines(t, carol, "QUIT :gone")
	expectFrom(t, alice, "pbcarol", "QUIT", "Quit: gone")

	want := []string{
		"pbalice JOIN #pb",
		"pbplain JOIN #pb",
		"pbalice TOPIC #pb the topic",
		"pbbob JOIN #pb",
		"pbalice PRIVMSG #pb first",
		"pbalice MODE #pb +v pbbob",
		"pbbob NICK pbbob2",
		"pbalice KICK #pb pbbob2 out",
		"pbcarol JOIN #pb",
		"pbcarol PART #pb bye",
		"pbcarol JOIN #pb",
		"pbalice PRIVMSG #pb second",
		"pbcarol QUIT Quit: gone",
	}
	all := historyUntil(t, alice, "CHATHISTORY LATEST #pb * 50", "#pb", len(want))
	if got := shapes(all); !slices.Equal(got, want) {
		t.Fatalf("history with event playback:\n got %q\nwant %q", got, want)
	}
	for _, m := range all {
		if m.Tags["msgid"] == "" || m.Tags["time"] == "" {
			t.Fatalf("history line without msgid or time: %s", m.String())
		}
	}
	msgid := func(i int) string { return "msgid=" + all[i].Tags["msgid"] }
	stamp := func(i int) string { return "timestamp=" + all[i].Tags["time"] }
	tests := []struct {
		name, command string
		want          []string
	}{
		{"latest 3", "CHATHISTORY LATEST #pb * 3", want[10:]},
		{"latest after an event", "CHATHISTORY LATEST #pb " + msgid(9) + " 50", want[10:]},
		{"before a message", "CHATHISTORY BEFORE #pb " + msgid(4) + " 2", want[2:4]},
		{"before an event", "CHATHISTORY BEFORE #pb " + msgid(5) + " 50", want[:5]},
		{"after an event", "CHATHISTORY AFTER #pb " + msgid(3) + " 3", want[4:7]},
		{"after a message", "CHATHISTORY AFTER #pb " + msgid(4) + " 2", want[5:7]},
		{"after a timestamp", "CHATHISTORY AFTER #pb " + stamp(0) + " 50", nil}, // checked below: everything later than the first millisecond
		{"between events", "CHATHISTORY BETWEEN #pb " + msgid(3) + " " + msgid(8) + " 50", want[4:8]},
		{"between backwards", "CHATHISTORY BETWEEN #pb " + msgid(8) + " " + msgid(3) + " 2", want[6:8]},
		{"between a message and an event", "CHATHISTORY BETWEEN #pb " + msgid(4) + " " + msgid(7) + " 50", want[5:7]},
		{"around an event", "CHATHISTORY AROUND #pb " + msgid(6) + " 3", want[5:8]},
		{"around a message", "CHATHISTORY AROUND #pb " + msgid(11) + " 3", want[10:13]},
	}
	for _, tc := range tests {
		got := shapes(historyBatch(t, alice, tc.command, "#pb"))
		if tc.want == nil {
			if len(got) == 0 || len(got) >= len(want) || !slices.Equal(got, want[len(want)-len(got):]) {
				t.Errorf("%s: %q, want a tail of the history", tc.name, got)
			}
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s (%s):\n got %q\nwant %q", tc.name, tc.command, got, tc.want)
		}
	}

	// Without the capability: the messages only, as before.
	if got := texts(historyBatch(t, plain, "CHATHISTORY LATEST #pb * 50", "#pb")); !slices.Equal(got, []string{"first", "second"}) {
		t.Fatalf("history without event playback: %q", got)
	}
	if body := historyBatch(t, plain, "CHATHISTORY LATEST #pb * 50", "#pb"); len(body) != 2 {
		t.Fatalf("history without event playback holds %q", shapes(body))
	}
	// An event's msgid is no reference for a client that never saw it: an empty page.
	if body := historyBatch(t, plain, "CHATHISTORY BEFORE #pb "+msgid(5)+" 50", "#pb"); len(body) != 0 {
		t.Fatalf("BEFORE an event's msgid without event playback: %q", shapes(body))
	}
	// The REST routes serve messages only.
	if got := channelTexts(t, n, "#pb"); !slices.Equal(got, []string{"first", "second"}) {
		t.Fatalf("REST history: %q", got)
	}
	resp, body := httpDo(t, "GET", "http://"+n.HTTPAddr()+"/api/v1/messages/"+all[0].Tags["msgid"], "", nil)
	if resp.StatusCode != 404 {
		t.Fatalf("REST lookup of an event's msgid: %d %s", resp.StatusCode, body)
	}

	// The replay after JOIN (a client without draft/chathistory) includes the events.
	dave, _ := guest(t, n, "pbdave", "batch", "server-time", "message-tags", "draft/event-playback")
	sendLines(t, dave, "JOIN #pb")
	_, replay := batchBody(t, dave, "chathistory")
	if got := shapes(replay); len(got) == 0 || !slices.Contains(got, "pbcarol QUIT Quit: gone") || !slices.Contains(got, "pbalice PRIVMSG #pb second") {
		t.Fatalf("join replay with event playback: %q", got)
	}
}

// TestIRCEventPlaybackLiveMsgid: the live JOIN, TOPIC, MODE, NICK, KICK, PART and QUIT lines
// carry the msgid and time their replay under draft/event-playback carries, so a client can tell
// a replayed event it saw live (the specification has every event in history keep its msgid).
func TestIRCEventPlaybackLiveMsgid(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	alice, _ := guest(t, n, "plalice", append(slices.Clone(playbackCaps), "message-tags", "extended-join")...)
	bob, _ := guest(t, n, "plbob")
	joinChannels(t, alice, "#pl")
	live := []ircmsg.Message{}
	see := func(nick, command string, params ...string) {
		t.Helper()
		m := expectFrom(t, alice, nick, command, params...)
		if m.Tags["msgid"] == "" || m.Tags["time"] == "" {
			t.Fatalf("live %s without msgid or time: %s", command, m.String())
		}
		live = append(live, m)
	}
	sendLines(t, alice, "TOPIC #pl :topic one")
	see("plalice", "TOPIC", "#pl", "topic one")
	sendLines(t, alice, "TOPIC #pl :topic two")
	see("plalice", "TOPIC", "#pl", "topic two")
	sendLines(t, bob, "JOIN #pl")
	see("plbob", "JOIN", "#pl")
	sendLines(t, alice, "MODE #pl +v plbob")
	see("plalice", "MODE", "#pl", "+v", "plbob")
	sendLines(t, bob, "NICK plbob2")
	see("plbob", "NICK", "plbob2")
	sendLines(t, alice, "KICK #pl plbob2 :out")
	see("plalice", "KICK", "#pl", "plbob2", "out")
	sendLines(t, bob, "JOIN #pl", "PART #pl :bye")
	see("plbob2", "JOIN", "#pl")
	see("plbob2", "PART", "#pl", "bye")
	sendLines(t, bob, "JOIN #pl", "QUIT :gone")
	see("plbob2", "JOIN", "#pl")
	see("plbob2", "QUIT", "gone")

	replay := historyUntil(t, alice, "CHATHISTORY LATEST #pl * 50", "#pl", len(live)+1) // and alice's JOIN
	replay = replay[len(replay)-len(live):]
	ids := map[string]bool{}
	for i, m := range live {
		r := replay[i]
		if r.Command != m.Command || r.Tags["msgid"] != m.Tags["msgid"] || r.Tags["time"] != m.Tags["time"] {
			t.Errorf("replayed %s, live %s", r.String(), m.String())
		}
		if ids[m.Tags["msgid"]] {
			t.Errorf("msgid %s twice", m.Tags["msgid"])
		}
		ids[m.Tags["msgid"]] = true
	}
}

// TestIRCEventPlaybackIncarnation: a channel created again under a former channel's name does
// not replay the former channel's events. (A guest's channel without a topic is deleted when its
// last member leaves.)
func TestIRCEventPlaybackIncarnation(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	alice, _ := guest(t, n, "pbialice", append(slices.Clone(playbackCaps), "message-tags")...)
	joinChannels(t, alice, "#pbi")
	sendLines(t, alice, "MODE #pbi +m")
	expectFrom(t, alice, "pbialice", "MODE", "#pbi", "+m")
	sendLines(t, alice, "PART #pbi")
	expectFrom(t, alice, "pbialice", "PART", "#pbi")
	joinChannels(t, alice, "#pbi")
	got := shapes(historyBatch(t, alice, "CHATHISTORY LATEST #pbi * 50", "#pbi"))
	if !slices.Equal(got, []string{"pbialice JOIN #pbi"}) {
		t.Fatalf("history of the new channel: %q", got)
	}
}

// TestIRCEventPlaybackAcrossNodes: the same CHATHISTORY with event playback answers alike, line
// for line (msgid and time included), on every node of a cluster.
func TestIRCEventPlaybackAcrossNodes(t *testing.T) {
	nodes := startCluster(t)
	readers := make([]*ircclient.Client, len(nodes))
	for i, nd := range nodes {
		readers[i], _ = login(t, nd, fmt.Sprintf("xpbread%d", i), playbackCaps...)
		joinChannels(t, readers[i], "#xpb")
	}
	actor, _ := guest(t, nodes[1], "xpbactor")
	joinChannels(t, actor, "#xpb")
	sendLines(t, readers[0], "MODE #xpb +v xpbactor", "TOPIC #xpb :cluster topic")
	expectFrom(t, actor, "xpbread0", "TOPIC", "#xpb", "cluster topic")
	sendLines(t, actor, "PRIVMSG #xpb :hello", "NICK xpbactor2", "PART #xpb :done")
	expectFrom(t, readers[2], "xpbactor2", "PART", "#xpb", "done")

	// 3 reader joins, the actor's join, MODE, TOPIC, the message, NICK, PART.
	const lines = 9
	var first []string
	for i, r := range readers {
		var got []string
		for _, m := range historyUntil(t, r, "CHATHISTORY LATEST #xpb * 50", "#xpb", lines) {
			got = append(got, historyLine(m))
		}
		if i == 0 {
			first = got
			continue
		}
		if !slices.Equal(got, first) {
			t.Fatalf("node %d answers\n%s\nnode 0 answers\n%s", i, strings.Join(got, "\n"), strings.Join(first, "\n"))
		}
	}
	if len(first) != lines {
		t.Fatalf("history: %q", first)
	}
	// A page bounded by an event's msgid is the same on every node too.
	ref := strings.Fields(first[4])[1] // the MODE line's msgid
	var want []string
	for i, r := range readers {
		var got []string
		for _, m := range historyBatch(t, r, "CHATHISTORY AFTER #xpb msgid="+ref+" 3", "#xpb") {
			got = append(got, historyLine(m))
		}
		if i == 0 {
			want = got
		} else if !slices.Equal(got, want) {
			t.Fatalf("AFTER an event on node %d: %q, node 0: %q", i, got, want)
		}
	}
	if len(want) != 3 {
		t.Fatalf("AFTER the MODE line: %q", want)
	}
}
