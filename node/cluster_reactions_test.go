package node

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
	"github.com/palaver-chat/palaver/testcluster/loopback"
)

// signedReaction is the IRC line of a react (or unreact) on #react, signed with key as did.
func signedReaction(t *testing.T, did string, key ed25519.PrivateKey, root, emoji string, remove bool) string {
	t.Helper()
	eventID := ulid.Make().String()
	venue, _ := signing.ChannelVenue("#react")
	kind, tag := signing.KindReact, "+react"
	if remove {
		kind, tag = signing.KindUnreact, "+freeq.at/unreact"
	}
	canonical, err := signing.Mutation{Envelope: signing.Envelope{From: did, MsgID: eventID, Venue: venue},
		Kind: kind, Subject: root, Emoji: emoji}.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	return "@+freeq.at/eventid=" + eventID + ";" + tag + "=" + emoji + ";+reply=" + root +
		";+freeq.at/sig=" + signing.Sign(key, canonical) + " TAGMSG #react"
}

// reactionAddrs are fixed loopback addresses for a node that is stopped and started again on
// them (a restarted node keeps its Raft and gossip addresses).
func reactionAddrs(t *testing.T) (irc, http, raftAddr, gossip, cluster string) {
	t.Helper()
	addrs, err := loopback.Addrs(5)
	if err != nil {
		t.Fatal(err)
	}
	return addrs[0], addrs[1], addrs[2], addrs[3], addrs[4]
}

// reactionTally reads a message's +freeq.at/reactions tally from a node's REST history of
// #react (nil when it has none, or the message is not there).
func reactionTally(t *testing.T, n *Node, msgid string) map[string]int {
	t.Helper()
	resp, body := httpDo(t, "GET", "http://"+n.HTTPAddr()+"/api/v1/channels/react/history?limit=100", "", nil)
	if resp.StatusCode != 200 {
		return nil
	}
	var msgs []struct {
		MsgID string            `json:"msgid"`
		Tags  map[string]string `json:"tags"`
	}
	if err := json.Unmarshal(body, &msgs); err != nil {
		t.Fatalf("history on %s: %v", n.cfg.NodeName, err)
	}
	for _, m := range msgs {
		if m.MsgID != msgid {
			continue
		}
		var tally map[string]int
		if raw := m.Tags["+freeq.at/reactions"]; raw != "" {
			if err := json.Unmarshal([]byte(raw), &tally); err != nil {
				t.Fatalf("tally %q: %v", raw, err)
			}
		}
		return tally
	}
	return nil
}

func expectTagmsg(t *testing.T, c *ircclient.Client, tag, value string) ircmsg.Message {
	t.Helper()
	m, err := c.Expect(testCtx(t), func(m ircmsg.Message) bool {
		return m.Command == "TAGMSG" && m.Param(0) == "#react" && m.Tags[tag] == value
	})
	if err != nil {
		t.Fatalf("waiting for a TAGMSG with %s=%s: %v\nseen: %v", tag, value, err, lastSeen(c))
	}
	return m
}

// TestReactionsCrossTheCluster: a reaction made on node A reaches a member on node B live and
// node C's history tally; the unreact removes it everywhere; node C, down while a reaction is
// made, catches up when it returns, and on a TAGMSG kept in history then, which its history holds
// once; a typing TAGMSG from A reaches B.
func TestReactionsCrossTheCluster(t *testing.T) {
	ircC, httpC, raftC, gossipC, clusterC := reactionAddrs(t)
	dirC, dirA := t.TempDir(), t.TempDir()
	secretA := filepath.Join(dirA, clusterSecretFile)
	nodeConfig := func(name string, join []string, fixed bool) func(*Config) {
		return func(c *Config) {
			c.NodeName = name
			c.GossipAddr, c.ClusterAddr = "127.0.0.1:0", "127.0.0.1:0"
			c.Join = join
			if len(join) > 0 {
				c.ClusterSecret = secretA
			}
			if fixed {
				c.IRCAddr, c.HTTPAddr, c.RaftAddr, c.GossipAddr, c.ClusterAddr = ircC, httpC, raftC, gossipC, clusterC
				c.TLSAddr = ""
			}
		}
	}
	a := startNode(t, dirA, nodeConfig("node-a.test", nil, false))
	join := []string{a.GossipAddr()}
	b := startNode(t, t.TempDir(), nodeConfig("node-b.test", join, false))
	c := startNode(t, dirC, nodeConfig("node-c.test", join, true))
	threeVoters := func() bool { return liveVoters(a) == 3 }
	eventually(t, "three voters", threeVoters)

	caps := []string{"message-tags", "echo-message", "server-time", "account-tag"}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	alice, res := loginAs(t, a, ircclient.NewEd25519Signer(key), "alice", caps...)
	bob, _ := login(t, b, "bob", caps...)
	alice.Send("JOIN #react")
	expect(t, alice, "366", "#react")
	bob.Send("JOIN #react")
	expect(t, bob, "366", "#react")
	alice.Send("PRIVMSG #react :react to this")
	root := expect(t, bob, "PRIVMSG", "react to this").Tags["msgid"]
	expect(t, alice, "PRIVMSG", "react to this")

	// React on A: B gets the TAGMSG live, as A rendered it; C's history counts it.
	alice.Send(signedReaction(t, res.DID, key, root, "👍", false))
	echo := expectTagmsg(t, alice, "+react", "👍")
	live := expectTagmsg(t, bob, "+react", "👍")
	for _, tag := range []string{"msgid", "time", "account", "+freeq.at/sig", "+reply"} {
		if live.Tags[tag] == "" || live.Tags[tag] != echo.Tags[tag] {
			t.Errorf("tag %s on node b = %q, on node a = %q", tag, live.Tags[tag], echo.Tags[tag])
		}
	}
	if live.Source != echo.Source {
		t.Errorf("sender on node b = %q, on node a = %q", live.Source, echo.Source)
	}
	for _, n := range []*Node{a, b, c} {
		eventually(t, "the tally on "+n.cfg.NodeName, func() bool { return reactionTally(t, n, root)["👍"] == 1 })
	}

	// Unreact on A: gone everywhere.
	alice.Send(signedReaction(t, res.DID, key, root, "👍", true))
	expectTagmsg(t, bob, "+freeq.at/unreact", "👍")
	for _, n := range []*Node{a, b, c} {
		eventually(t, "no tally on "+n.cfg.NodeName, func() bool { return len(reactionTally(t, n, root)) == 0 })
	}

	// A typing notification from A reaches B, and is not stored.
	alice.Send("@+typing=active TAGMSG #react")
	expectTagmsg(t, bob, "+typing", "active")

	// C is down while a reaction is made; it catches up when it returns.
	if err := c.Close(); err != nil {
		t.Fatalf("stopping node c: %v", err)
	}
	alice.Send(signedReaction(t, res.DID, key, root, "🎉", false))
	expectTagmsg(t, bob, "+react", "🎉")
	// And a TAGMSG kept in history (+draft/persist): stored on A, copied to C when it returns.
	alice.Send("@+draft/persist;+client-only-tag-test=kept TAGMSG #react")
	kept := expectTagmsg(t, bob, "+client-only-tag-test", "kept").Tags["msgid"]
	c = startNode(t, dirC, nodeConfig("node-c.test", join, true))
	eventually(t, "three voters again", threeVoters)
	eventually(t, "node c catching up on the reaction", func() bool { return reactionTally(t, c, root)["🎉"] == 1 })
	if got := reactionTally(t, c, root); len(got) != 1 {
		t.Fatalf("tally on node c after catching up = %v, want only 🎉", got)
	}
	dave, _ := guest(t, c, "dave", "message-tags", "batch", "server-time", "draft/chathistory", "draft/event-playback")
	dave.Send("JOIN #react")
	expect(t, dave, "366", "#react")
	eventually(t, "node c's history holding the kept TAGMSG once", func() bool {
		dave.Send("CHATHISTORY LATEST #react * 50")
		_, body := batchBody(t, dave, "chathistory")
		n := 0
		for _, m := range body {
			if m.Command == "TAGMSG" && m.Tags["msgid"] == kept && m.Tags["+client-only-tag-test"] == "kept" {
				n++
			}
		}
		if n > 1 {
			t.Fatalf("the kept TAGMSG is %d times in node c's history", n)
		}
		return n == 1
	})
}
