package irc_test

import (
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

func TestEditDeleteAndPinFromIRC(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	caps := []string{"message-tags", "echo-message", "batch", "draft/chathistory"}
	// Both are guests: guests' edits and deletes are matched by nick and need no signature
	// (signed mutations by DID users are covered in signing_test.go).
	alice, _ := guest(t, n, "alice", caps...)
	bob, _ := guest(t, n, "bob", caps...)
	alice.Send("JOIN #edits")
	expect(t, alice, "366", "#edits")
	bob.Send("JOIN #edits")
	expect(t, bob, "366", "#edits")

	alice.Send("PRIVMSG #edits :frist post")
	echo := expect(t, alice, "PRIVMSG", "frist post")
	root := echo.Tags["msgid"]
	if root == "" {
		t.Fatalf("echo without msgid: %s", echo.String())
	}
	expect(t, bob, "PRIVMSG", "frist post")

	// The author edits; members see the new text tagged with the root.
	alice.Send("@+draft/edit=" + root + " PRIVMSG #edits :first post")
	edited := expect(t, bob, "PRIVMSG", "first post")
	if edited.Tags["+draft/edit"] != root || edited.Tags["msgid"] == root {
		t.Fatalf("edit relayed as %s", edited.String())
	}
	// Someone else may not edit it.
	bob.Send("@+draft/edit=" + root + " PRIVMSG #edits :hijacked")
	expect(t, bob, "FAIL", "EDIT", "AUTHOR_MISMATCH")
	bob.Send("@+draft/edit=01ARZ3NDEKTSV4RRFFQ69G5FAV PRIVMSG #edits :ghost")
	expect(t, bob, "FAIL", "EDIT", "MESSAGE_NOT_FOUND")

	// History shows the edited form under the root msgid.
	alice.Send("CHATHISTORY LATEST #edits * 10")
	hist := collectBatch(t, alice)
	if len(hist) != 1 || hist[0].Param(1) != "first post" || hist[0].Tags["msgid"] != root {
		t.Fatalf("history = %v, want the edited text under root msgid %s", hist, root)
	}

	// Pins: ops only, no duplicates, listed newest first.
	bob.Send("PIN #edits " + root)
	expect(t, bob, "482", "#edits")
	alice.Send("PIN #edits " + edited.Tags["msgid"]) // a revision resolves to its root
	pinned := expect(t, bob, "NOTICE", "#edits", "pinned a message")
	if pinned.Tags["+freeq.at/pin"] != root {
		t.Fatalf("pin broadcast %s", pinned.String())
	}
	alice.Send("PIN #edits " + root)
	expect(t, alice, "NOTICE", "is already pinned in #edits")
	alice.Send("PINS #edits")
	expect(t, alice, "NOTICE", root, "first post")
	expect(t, alice, "NOTICE", "1 pinned message(s)")

	// Deletes: not by others; by the author they disappear from history.
	bob.Send("@+draft/delete=" + root + " TAGMSG #edits")
	expect(t, bob, "FAIL", "DELETE", "AUTHOR_MISMATCH")
	alice.Send("@+draft/delete=" + root + " TAGMSG #edits")
	del := expect(t, bob, "TAGMSG", "#edits")
	if del.Tags["+draft/delete"] != root {
		t.Fatalf("delete relayed as %s", del.String())
	}
	alice.Send("PRIVMSG #edits :after")
	expect(t, alice, "PRIVMSG", "after")
	alice.Send("CHATHISTORY LATEST #edits * 10")
	var replay []string
	for _, m := range collectBatch(t, alice) {
		if m.Command == "PRIVMSG" {
			replay = append(replay, m.Param(1))
		}
	}
	if strings.Join(replay, "|") != "after" {
		t.Fatalf("history after delete = %v, want only [after]", replay)
	}
}

// collectBatch reads the next batch and returns the lines inside it.
func collectBatch(t *testing.T, c *ircclient.Client) []ircmsg.Message {
	t.Helper()
	start := expect(t, c, "BATCH")
	id := strings.TrimPrefix(start.Param(0), "+")
	var out []ircmsg.Message
	for {
		m, err := c.ReadMessage(testCtx(t))
		if err != nil {
			t.Fatalf("reading batch %s: %v", id, err)
		}
		if m.Command == "BATCH" && m.Param(0) == "-"+id {
			return out
		}
		if m.Tags["batch"] == id {
			out = append(out, m)
		}
	}
}

func TestReactionsAreTalliedInHistory(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	caps := []string{"message-tags", "echo-message", "batch", "draft/chathistory"}
	alice, _ := guest(t, n, "alice", caps...)
	bob, _ := guest(t, n, "bob", caps...)
	for _, c := range []*ircclient.Client{alice, bob} {
		c.Send("JOIN #react")
		expect(t, c, "366", "#react")
	}
	alice.Send("PRIVMSG #react :react to me")
	root := expect(t, alice, "PRIVMSG", "react to me").Tags["msgid"]
	bob.Send("@+react=👍;+reply=" + root + " TAGMSG #react")
	got := expect(t, alice, "TAGMSG", "#react")
	if got.Tags["+react"] != "👍" || got.Tags["+reply"] != root {
		t.Fatalf("reaction relayed as %s", got.String())
	}
	bob.Send("@+react=👍;+reply=01ARZ3NDEKTSV4RRFFQ69G5FAV TAGMSG #react")
	expect(t, bob, "FAIL", "TAGMSG", "MESSAGE_NOT_FOUND")

	tally := func() string {
		alice.Send("CHATHISTORY LATEST #react * 5")
		for _, m := range collectBatch(t, alice) {
			if m.Tags["msgid"] == root {
				return m.Tags["+freeq.at/reactions"]
			}
		}
		t.Fatal("message missing from history")
		return ""
	}
	if got := tally(); got != `{"👍":1}` {
		t.Fatalf("tally = %q", got)
	}
	resp, body := httpDo(t, "GET", "http://"+n.HTTPAddr()+"/api/v1/channels/react/history", "", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"+freeq.at/reactions":"{\"👍\":1}"`) {
		t.Fatalf("REST history = %d %s", resp.StatusCode, body)
	}
	bob.Send("@+freeq.at/unreact=👍;+reply=" + root + " TAGMSG #react")
	expect(t, alice, "TAGMSG", "#react")
	if got := tally(); got != "" {
		t.Fatalf("tally after unreact = %q", got)
	}
}
