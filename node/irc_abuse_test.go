package node

import (
	"strings"
	"testing"
)

// TestIRCServerOwnedTagsStripped: a client cannot set the tags only a server sets (the origin of
// a federated message, reaction tallies, pin notices, ...); its own client tags still travel.
func TestIRCServerOwnedTagsStripped(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	sender, _ := guest(t, n, "forger", "message-tags")
	reader, _ := guest(t, n, "reader", "message-tags", "batch", "draft/chathistory")
	joinChannels(t, sender, "#owned")
	joinChannels(t, reader, "#owned")
	sendLines(t, sender, "@+freeq.at/origin=peer.example;+freeq.at/reactions=x;+freeq.at/pin=y;+freeq.at/actor-class=agent;+freeq.at/commit-verified=true;+freeq.at/streaming=1 PRIVMSG #owned :as a peer")
	m := expectFrom(t, reader, "forger", "PRIVMSG", "#owned", "as a peer")
	for _, tag := range []string{"+freeq.at/origin", "+freeq.at/reactions", "+freeq.at/pin", "+freeq.at/actor-class", "+freeq.at/commit-verified"} {
		if v, ok := m.Tags[tag]; ok {
			t.Errorf("a client set the server-owned tag %s=%q: %q", tag, v, m.String())
		}
	}
	if m.Tags["+freeq.at/streaming"] != "1" {
		t.Errorf("a client tag was dropped: %q", m.String())
	}
	// CHATHISTORY shows the stored message: it does not carry the tags either.
	sendLines(t, reader, "CHATHISTORY LATEST #owned * 10")
	_, body := batchBody(t, reader, "chathistory")
	found := false
	for _, h := range body {
		if h.Param(1) != "as a peer" {
			continue
		}
		found = true
		if _, ok := h.Tags["+freeq.at/origin"]; ok {
			t.Errorf("the stored message carries the origin tag: %q", h.String())
		}
	}
	if !found {
		t.Errorf("the message is not in history: %q", lines(body))
	}
}

// TestIRCNickLookalikes: nicks with invisible, bidirectional-control, control or compatibility
// characters are refused, and so is a nick that looks like a nick another identity owns, online
// or not; the owner may still take its own nick's lookalikes.
func TestIRCNickLookalikes(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	owner := newEd25519(t)
	c, _ := loginAs(t, n, owner, "victim")
	quit(t, n, c, "victim")
	g, _ := guest(t, n, "mallory")
	for _, nick := range []string{"victim\u200b", "vic\u202etim", "victim\u00a0", "\ufeffvictim", "vic\u0085tim", "ｖｉｃｔｉｍ"} {
		sendLines(t, g, "NICK "+nick)
		m := expect(t, g, "432")
		if !strings.Contains(m.Param(2), "not allowed") {
			t.Errorf("NICK %+q: 432 %q, want the reason", nick, m.Param(2))
		}
	}
	for _, nick := range []string{"vict\u0456m", "\u03bdictim"} {
		sendLines(t, g, "NICK "+nick)
		m := expect(t, g, "432")
		if !strings.Contains(m.Param(2), "too like victim") {
			t.Errorf("NICK %+q: 432 %q, want it named as too like victim", nick, m.Param(2))
		}
	}
	sendLines(t, g, "NICK bystander")
	expectFrom(t, g, "mallory", "NICK", "bystander")
	// The owner itself is not kept from a lookalike of its own nick.
	o, _ := loginAs(t, n, owner, "victim")
	sendLines(t, o, "NICK vict\u0456m")
	expectFrom(t, o, "victim", "NICK", "vict\u0456m")
}
