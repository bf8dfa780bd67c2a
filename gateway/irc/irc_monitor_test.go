package irc_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// TestIRCMonitor follows the IRCv3 monitor specification: MONITOR + answers 730/731 at once, the
// list's nicks are announced as they come online, change nick and go offline, L lists them
// (732/733), S restates their status, - and C remove them, and a list past MONITOR=<n> gets 734
// with the nicks that did not fit.
func TestIRCMonitor(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	w, _ := guest(t, n, "watcher")
	sendLines(t, w, "VERSION")
	expect(t, w, "005", "MONITOR=100")

	sendLines(t, w, "MONITOR + montarget,MonOther")
	expectParams(t, w, "731", "watcher", "montarget,MonOther")

	target, _ := guest(t, n, "MonTarget")
	m := expect(t, w, "730", "MonTarget!")
	if m.Param(0) != "watcher" || !strings.HasPrefix(m.Param(1), "MonTarget!") || !strings.Contains(m.Param(1), "@") {
		t.Fatalf("730 %v, want watcher :MonTarget!user@host", m.Params)
	}

	sendLines(t, w, "MONITOR S")
	expect(t, w, "730", "MonTarget!")
	expectParams(t, w, "731", "watcher", "MonOther")
	sendLines(t, w, "MONITOR L")
	msgs := readUntil(t, w, "733", func(m ircmsg.Message) bool { return m.Command == "733" })
	if l, ok := findMsg(msgs, "732"); !ok || l.Param(1) != "MonOther,montarget" {
		t.Fatalf("MONITOR L: %v", lines(msgs))
	}

	sendLines(t, target, "NICK montarget2")
	expectParams(t, w, "731", "watcher", "MonTarget")
	sendLines(t, target, "NICK MonOther")
	expect(t, w, "730", "MonOther!")
	// A change of case only: the nick neither came online nor left, so no numeric.
	sendLines(t, target, "NICK MONOTHER")
	expectFrom(t, target, "MonOther", "NICK", "MONOTHER")
	drain(t, target) // the NICK command, and so its rendering, is over
	refuteMsg(t, drain(t, w), "730")
	sendLines(t, target, "QUIT :bye")
	expectParams(t, w, "731", "watcher", "MONOTHER")

	sendLines(t, w, "MONITOR - montarget", "MONITOR L")
	msgs = readUntil(t, w, "733", func(m ircmsg.Message) bool { return m.Command == "733" })
	if l, ok := findMsg(msgs, "732"); !ok || l.Param(1) != "MonOther" {
		t.Fatalf("MONITOR L after -: %v", lines(msgs))
	}
	sendLines(t, w, "MONITOR C", "MONITOR L")
	msgs = readUntil(t, w, "733", func(m ircmsg.Message) bool { return m.Command == "733" })
	refuteMsg(t, msgs, "732")

	// Removed nicks are no longer announced.
	again, _ := guest(t, n, "montarget")
	refuteMsg(t, drain(t, w), "730")
	sendLines(t, again, "QUIT")

	var many []string
	for i := 0; i < 102; i++ {
		many = append(many, fmt.Sprintf("m%d", i))
	}
	sendLines(t, w, "MONITOR + "+strings.Join(many, ","))
	full := expect(t, w, "734")
	if full.Param(1) != "100" || full.Param(2) != "m100,m101" {
		t.Fatalf("734 %v, want the limit and the two nicks that did not fit", full.Params)
	}
	sendLines(t, w, "MONITOR X")
	expect(t, w, "FAIL", "MONITOR", "INVALID_PARAMS")
	sendLines(t, w, "MONITOR +")
	expect(t, w, "461", "MONITOR")
}

// TestIRCExtendedMonitor: with extended-monitor and away-notify/setname/account-notify, a
// watcher sharing no channel with a monitored user gets its AWAY, SETNAME and ACCOUNT lines;
// without extended-monitor it does not, and a watcher sharing a channel gets them once.
func TestIRCExtendedMonitor(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	ext, _ := guest(t, n, "extwatch", "extended-monitor", "away-notify", "setname", "account-notify")
	plain, _ := guest(t, n, "plainwatch", "away-notify", "setname")
	shared, _ := guest(t, n, "sharewatch", "extended-monitor", "away-notify")
	for _, c := range []*ircclient.Client{ext, plain, shared} {
		sendLines(t, c, "MONITOR + exttarget")
	}
	expect(t, ext, "731", "exttarget")
	expect(t, plain, "731", "exttarget")
	expect(t, shared, "731", "exttarget")

	target, _ := login(t, n, "exttarget")
	expect(t, ext, "730", "exttarget!")
	joinChannels(t, target, "#extshare")
	joinChannels(t, shared, "#extshare")

	sendLines(t, target, "AWAY :gone fishing")
	expectFrom(t, ext, "exttarget", "AWAY", "gone fishing")
	sendLines(t, target, "SETNAME :New Name")
	expectFrom(t, ext, "exttarget", "SETNAME", "New Name")
	expectFrom(t, shared, "exttarget", "AWAY", "gone fishing")
	sendLines(t, target, "AWAY")
	expectFrom(t, ext, "exttarget", "AWAY")

	refuteMsg(t, drain(t, plain), "AWAY")
	drain(t, shared)
	got := 0
	for _, m := range shared.Seen() { // every line the client read
		if m.Command == "AWAY" && isFrom(m, "exttarget") {
			got++
		}
	}
	if got != 2 { // "gone fishing" once, then the return once
		t.Fatalf("a watcher sharing a channel got %d AWAY lines, want 2 (once each)", got)
	}
}

// TestIRCMonitorAcrossNodes: a nick monitored on one node is announced when it registers and
// when it leaves on another.
func TestIRCMonitorAcrossNodes(t *testing.T) {
	nodes := startCluster(t)
	w, _ := guest(t, nodes[0], "xwatcher")
	sendLines(t, w, "MONITOR + xmontarget")
	expectParams(t, w, "731", "xwatcher", "xmontarget")
	target, _ := guest(t, nodes[2], "xmontarget")
	expect(t, w, "730", "xmontarget!")
	sendLines(t, target, "QUIT")
	expectParams(t, w, "731", "xwatcher", "xmontarget")
}
