package irc_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm/meta"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// TestIRCMetadata follows draft/metadata-2 for users: the capability's limits, SET (761), removal
// (766), GET and LIST in a metadata batch, subscriptions (770/771/772) and their limit, the
// METADATA notification to subscribed users sharing a channel, and each FAIL code.
func TestIRCMetadata(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	offersMetadataCap(t, n, "draft/metadata-2", "")

	signer := newEd25519(t)
	alice, _ := loginAs(t, n, signer, "metalice", "draft/metadata-2", "batch")
	bob, _ := guest(t, n, "metabob", "draft/metadata-2", "batch")
	carol, _ := guest(t, n, "metacarol") // no capability: never notified
	joinChannels(t, alice, "#meta")
	joinChannels(t, bob, "#meta")
	joinChannels(t, carol, "#meta")

	sendLines(t, bob, "METADATA * SUB avatar display-name Bad:Key")
	expect(t, bob, "FAIL", "METADATA", "KEY_INVALID", "Bad:Key")
	expectParams(t, bob, "770", "metabob", "avatar display-name")

	sendLines(t, alice, "METADATA * SET avatar :https://a.example/me.png")
	expectParams(t, alice, "761", "metalice", "*", "avatar", "*", "https://a.example/me.png")
	note := expectFrom(t, bob, "metalice", "METADATA")
	if strings.Join(note.Params, " ") != "metalice avatar * https://a.example/me.png" {
		t.Fatalf("notification %v", note.Params)
	}
	sendLines(t, alice, "METADATA * SET homepage :https://a.example")
	expect(t, alice, "761", "homepage")
	refuteMsg(t, drain(t, bob), "METADATA", "homepage") // not subscribed
	refuteMsg(t, drain(t, carol), "METADATA")

	sendLines(t, bob, "METADATA metalice GET avatar display-name BAD")
	start, body := batchBody(t, bob, "metadata")
	if start.Param(1) != "metadata" || len(body) != 3 {
		t.Fatalf("GET batch %v: %v", start.Params, lines(body))
	}
	if body[0].Command != "761" || body[0].Param(4) != "https://a.example/me.png" ||
		body[1].Command != "766" || body[1].Param(2) != "display-name" ||
		body[2].Command != "FAIL" || body[2].Param(1) != "KEY_INVALID" {
		t.Fatalf("GET replies %v", lines(body))
	}
	sendLines(t, bob, "METADATA metalice LIST")
	_, body = batchBody(t, bob, "metadata")
	if len(body) != 2 || body[0].Param(2) != "avatar" || body[1].Param(2) != "homepage" {
		t.Fatalf("LIST %v", lines(body))
	}

	sendLines(t, bob, "METADATA metalice SET avatar :mine now")
	expect(t, bob, "FAIL", "METADATA", "KEY_NO_PERMISSION", "metalice", "avatar")
	sendLines(t, alice, "METADATA * SET Avatar :x")
	expect(t, alice, "FAIL", "METADATA", "KEY_INVALID", "Avatar")
	sendLines(t, alice, "METADATA * SET avatar :"+strings.Repeat("v", meta.MaxValueBytes+1))
	expect(t, alice, "FAIL", "METADATA", "VALUE_INVALID")
	sendLines(t, alice, "METADATA nobody-here LIST")
	expect(t, alice, "FAIL", "METADATA", "INVALID_TARGET", "nobody-here")
	sendLines(t, alice, "METADATA * FROB")
	expect(t, alice, "FAIL", "METADATA", "SUBCOMMAND_INVALID", "FROB")

	sendLines(t, alice, "METADATA * SET avatar")
	expectParams(t, alice, "766", "metalice", "*", "avatar", "key not set")
	if m := expectFrom(t, bob, "metalice", "METADATA", "avatar"); len(m.Params) != 3 {
		t.Fatalf("removal notification %v, want no value", m.Params)
	}
	sendLines(t, alice, "METADATA * SET avatar")
	expect(t, alice, "FAIL", "METADATA", "KEY_NOT_SET", "avatar")

	for i := 1; i < meta.MaxKeys; i++ { // homepage is set already
		sendLines(t, alice, fmt.Sprintf("METADATA * SET k%d :v", i))
	}
	syncClient(t, alice)
	sendLines(t, alice, "METADATA * SET one-too-many :v")
	expect(t, alice, "FAIL", "METADATA", "LIMIT_REACHED")
	sendLines(t, alice, "METADATA * CLEAR")
	_, body = batchBody(t, alice, "metadata")
	if len(body) != meta.MaxKeys || body[0].Command != "766" {
		t.Fatalf("CLEAR %d lines: %v", len(body), lines(body))
	}

	var keys []string
	for i := 0; i < 52; i++ {
		keys = append(keys, fmt.Sprintf("s%d", i))
	}
	sendLines(t, bob, "METADATA * SUB "+strings.Join(keys[:30], " "), "METADATA * SUB "+strings.Join(keys[30:], " "))
	expect(t, bob, "FAIL", "METADATA", "TOO_MANY_SUBS", "s48") // 2 subscribed before, 48 more fit
	sendLines(t, bob, "METADATA * UNSUB avatar s0")
	expectParams(t, bob, "771", "metabob", "avatar s0")
	sendLines(t, bob, "METADATA * SUBS")
	var subs string
	for _, m := range drain(t, bob) {
		if m.Command == "772" {
			subs += " " + m.Param(1)
		}
	}
	if strings.Contains(subs, "avatar") || !strings.Contains(subs, "display-name") {
		t.Fatalf("SUBS %q", subs)
	}

	// The DID's metadata outlives the session.
	sendLines(t, alice, "METADATA * SET display-name :Alice")
	expect(t, alice, "761", "display-name")
	quit(t, n, alice, "metalice")
	again, _ := loginAs(t, n, signer, "metalice", "draft/metadata-2", "batch")
	_, body = batchBody(t, again, "metadata") // a client with the capability gets its keys at registration
	if len(body) != 1 || strings.Join(body[0].Params, " ") != "metalice display-name * Alice" {
		t.Fatalf("registration metadata %v", lines(body))
	}
	sendLines(t, again, "METADATA * GET display-name")
	expect(t, again, "761", "display-name", "Alice")
}

// TestIRCMetadataChannel: channel operators set a channel's keys, members may not; a subscribed
// member is notified, and a client joining gets the channel's and its members' subscribed keys.
func TestIRCMetadataChannel(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	op, _ := login(t, n, "chanmetaop", "draft/metadata-2")
	member, _ := guest(t, n, "chanmetamember", "draft/metadata-2")
	joinChannels(t, op, "#chanmeta")
	joinChannels(t, member, "#chanmeta")
	sendLines(t, member, "METADATA * SUB url avatar")
	expect(t, member, "770")

	sendLines(t, op, "METADATA #chanmeta SET url :https://chan.example")
	expectParams(t, op, "761", "chanmetaop", "#chanmeta", "url", "*", "https://chan.example")
	expectFrom(t, member, "chanmetaop", "METADATA", "#chanmeta", "url", "https://chan.example")
	sendLines(t, member, "METADATA #chanmeta SET url :mine")
	expect(t, member, "FAIL", "METADATA", "KEY_NO_PERMISSION", "#chanmeta", "url")
	sendLines(t, member, "METADATA * SET avatar :https://m.example/a.png")
	expect(t, member, "761", "avatar")

	late, _ := guest(t, n, "chanmetalate", "draft/metadata-2")
	sendLines(t, late, "METADATA * SUB url avatar")
	expect(t, late, "770")
	joinChannels(t, late, "#chanmeta")
	msgs := drain(t, late)
	if _, ok := findMsg(msgs, "METADATA", "#chanmeta", "url", "https://chan.example"); !ok {
		t.Fatalf("joiner did not get the channel's metadata: %v", lines(msgs))
	}
	if _, ok := findMsg(msgs, "METADATA", "chanmetamember", "avatar", "https://m.example/a.png"); !ok {
		t.Fatalf("joiner did not get the members' metadata: %v", lines(msgs))
	}
	sendLines(t, late, "METADATA #chanmeta SYNC")
	msgs = drain(t, late)
	if _, ok := findMsg(msgs, "METADATA", "#chanmeta", "url"); !ok {
		t.Fatalf("SYNC: %v", lines(msgs))
	}
}

// TestIRCMetadataAcrossNodes: a key set on one node is read and announced on the others.
func TestIRCMetadataAcrossNodes(t *testing.T) {
	nodes := startCluster(t)
	setter, _ := login(t, nodes[0], "xmetaset", "draft/metadata-2")
	watcher, _ := guest(t, nodes[2], "xmetawatch", "draft/metadata-2")
	joinChannels(t, setter, "#xmeta")
	joinChannels(t, watcher, "#xmeta")
	expectFrom(t, setter, "xmetawatch", "JOIN", "#xmeta")
	sendLines(t, watcher, "METADATA * SUB homepage")
	expect(t, watcher, "770")
	sendLines(t, setter, "METADATA * SET homepage :https://x.example")
	expect(t, setter, "761", "homepage")
	expectFrom(t, watcher, "xmetaset", "METADATA", "xmetaset", "homepage", "https://x.example")
	reader, _ := guest(t, nodes[1], "xmetaread")
	sendLines(t, reader, "METADATA xmetaset GET homepage")
	expectParams(t, reader, "761", "xmetaread", "xmetaset", "homepage", "*", "https://x.example")
}

// TestIRCMetadataNotify: with draft/metadata-notify-2 a monitoring client gets a monitored user's
// subscribed keys when it starts monitoring, when the user comes online and when a key changes,
// though they share no channel; without the capability it gets none of them.
func TestIRCMetadataNotify(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	signer := newEd25519(t)
	user, _ := loginAs(t, n, signer, "notifyuser", "draft/metadata-2")
	sendLines(t, user, "METADATA * SET avatar :https://u.example/a.png")
	expect(t, user, "761", "avatar")

	notified, _ := guest(t, n, "notified", "draft/metadata-2", "draft/metadata-notify-2")
	plain, _ := guest(t, n, "notnotified", "draft/metadata-2")
	for _, c := range []*ircclient.Client{notified, plain} {
		sendLines(t, c, "METADATA * SUB avatar", "MONITOR + notifyuser")
		expect(t, c, "730", "notifyuser!")
	}
	expectParams(t, notified, "METADATA", "notifyuser", "avatar", "*", "https://u.example/a.png")

	sendLines(t, user, "METADATA * SET avatar :https://u.example/b.png")
	expect(t, user, "761", "avatar")
	expectFrom(t, notified, "notifyuser", "METADATA", "notifyuser", "avatar", "https://u.example/b.png")

	quit(t, n, user, "notifyuser")
	expect(t, notified, "731", "notifyuser")
	loginAs(t, n, signer, "notifyuser")
	expect(t, notified, "730", "notifyuser!")
	expectParams(t, notified, "METADATA", "notifyuser", "avatar", "*", "https://u.example/b.png")

	expect(t, plain, "730", "notifyuser!")
	for _, m := range plain.Seen() {
		if m.Command == "METADATA" {
			t.Fatalf("a monitor without draft/metadata-notify-2 got %s", m.String())
		}
	}
}
