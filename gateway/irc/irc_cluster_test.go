package irc_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestThreeNodesShareChannelsAndMessages(t *testing.T) {
	nodes := startCluster(t)
	a, b, c := nodes[0], nodes[1], nodes[2]
	caps := []string{"message-tags", "echo-message"}
	alice, res := login(t, a, "alice", caps...)
	bob := dial(t, b)
	if _, err := bob.Register(testCtx(t), "bob", caps...); err != nil {
		t.Fatal(err)
	}
	alice.Send("JOIN #everywhere")
	expect(t, alice, "366", "#everywhere")
	bob.Send("JOIN #everywhere")
	expect(t, bob, "353", "alice", "bob") // members on every node
	expect(t, alice, "JOIN", "#everywhere")

	alice.Send("PRIVMSG #everywhere :hello from node a")
	fromA := expect(t, bob, "PRIVMSG", "hello from node a")
	bob.Send("PRIVMSG #everywhere :hello from node b")
	expect(t, alice, "PRIVMSG", "hello from node b")

	// A third node serves the same history and verifies a message another node signed.
	url := "http://" + c.HTTPAddr() + "/api/v1/channels/everywhere/history"
	eventually(t, "history on node c", func() bool {
		resp, body := httpDo(t, "GET", url, "", nil)
		return resp.StatusCode == 200 && strings.Contains(string(body), "hello from node a") && strings.Contains(string(body), "hello from node b")
	})
	resp, body := httpDo(t, "GET", "http://"+c.HTTPAddr()+"/api/v1/verify/"+fromA.Tags["msgid"], "", nil)
	var v struct {
		Verdict   string `json:"verdict"`
		KeySource string `json:"key_source"`
	}
	if err := json.Unmarshal(body, &v); err != nil || resp.StatusCode != http.StatusOK || v.Verdict != "valid" || v.KeySource != "server-key" {
		t.Fatalf("verify on node c = %d %s (author %s)", resp.StatusCode, body, res.DID)
	}
	// A strong read on node c sees a topic set on node a at once; a bad consistency value is refused.
	alice.Send("TOPIC #everywhere :set on a")
	expect(t, alice, "TOPIC", "set on a")
	resp, body = httpDo(t, "GET", "http://"+c.HTTPAddr()+"/api/v1/channels/everywhere/topic?consistency=strong", "", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "set on a") {
		t.Fatalf("strong topic read on node c = %d %s", resp.StatusCode, body)
	}
	if resp, _ := httpDo(t, "GET", "http://"+c.HTTPAddr()+"/api/v1/channels?consistency=eventual", "", nil); resp.StatusCode != 400 {
		t.Fatalf("consistency=eventual = %d, want 400", resp.StatusCode)
	}
	// A delete made on node b reaches node a and node c: gone from history everywhere.
	bobGuest := bob // bob is a guest: his own delete needs no signature
	bobGuest.Send("PRIVMSG #everywhere :oops from b")
	oops := expect(t, alice, "PRIVMSG", "oops from b").Tags["msgid"]
	lookup := func(nd *Node) int {
		resp, _ := httpDo(t, "GET", "http://"+nd.HTTPAddr()+"/api/v1/messages/"+oops, "", nil)
		return resp.StatusCode
	}
	for _, nd := range []*Node{a, c} {
		eventually(t, "the message stored on "+nd.ServerDID(), func() bool { return lookup(nd) == http.StatusOK })
	}
	bobGuest.Send("@+draft/delete=" + oops + " TAGMSG #everywhere")
	del := expect(t, alice, "TAGMSG", "#everywhere")
	if del.Tags["+draft/delete"] != oops {
		t.Fatalf("delete relayed to node a as %s", del.String())
	}
	for _, nd := range []*Node{a, c} {
		eventually(t, "the delete applied on "+nd.ServerDID(), func() bool { return lookup(nd) == http.StatusNotFound })
		_, body := httpDo(t, "GET", "http://"+nd.HTTPAddr()+"/api/v1/channels/everywhere/history", "", nil)
		if strings.Contains(string(body), "oops from b") {
			t.Fatalf("deleted message still in %s's history", nd.ServerDID())
		}
	}
	// WHOIS on node c sees alice, who is connected to node a.
	carol, _ := guest(t, c, "carol")
	carol.Send("WHOIS alice")
	expect(t, carol, "330", "alice", res.DID)
}

// TestGuestDirectMessagesAcrossNodes: a direct message between a user and a guest connected to
// different nodes reaches the other party, and the user reads the conversation from any node.
func TestGuestDirectMessagesAcrossNodes(t *testing.T) {
	nodes := startCluster(t)
	a, b, c := nodes[0], nodes[1], nodes[2]
	caps := []string{"message-tags", "server-time", "batch", "draft/chathistory"}
	key := newEd25519(t)
	alice, _ := loginAs(t, a, key, "xalice", caps...)
	g, _ := guest(t, b, "xguest", caps...)
	sendLines(t, alice, "PRIVMSG xguest :to the guest on b")
	expectFrom(t, g, "xalice", "PRIVMSG", "to the guest on b")
	sendLines(t, g, "PRIVMSG xalice :to alice on a")
	expectFrom(t, alice, "xguest", "PRIVMSG", "to alice on a")

	other, _ := loginAs(t, c, key, "xalice2", caps...)
	eventually(t, "the conversation readable on node c", func() bool {
		sendLines(t, other, "CHATHISTORY LATEST xguest * 10")
		_, body := batchBody(t, other, "chathistory")
		return strings.Join(texts(body), ",") == "to the guest on b,to alice on a"
	})
}
