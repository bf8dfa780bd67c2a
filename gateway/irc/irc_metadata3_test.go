package irc_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm/meta"
)

// offersMetadataCap checks that CAP LS 302 offers the metadata capability name with its limits,
// after the flags the value starts with (such as "before-connect,").
func offersMetadataCap(t *testing.T, n *Node, name, flags string) {
	t.Helper()
	raw := dial(t, n)
	sendLines(t, raw, "CAP LS 302")
	_, ls := expectCapLS(t, raw)
	if !slices.Contains(ls, fmt.Sprintf("%s=%smax-subs=50,max-keys=%d,max-value-bytes=%d", name, flags, meta.MaxKeys, meta.MaxValueBytes)) {
		t.Fatalf("CAP LS %q lacks %s with its limits", ls, name)
	}
}

// TestIRCMetadata3 follows draft/metadata-3 where its replies differ from draft/metadata-2's:
// the target * is answered under the client's nick, GET answers every key in the order asked,
// 770 lists each key as a parameter, a subscribed user sharing a channel is told of a change with
// 761 (or 766 for a removed key) and of the keys of a channel's members on JOIN, and a value that
// is not UTF-8 or is too long is refused with FAIL METADATA INVALID_VALUE <key> and reaches no
// one. A draft/metadata-2 client beside it keeps its own forms.
func TestIRCMetadata3(t *testing.T) {
	n := startNode(t, t.TempDir(), func(c *Config) { c.Metadata3 = true })
	offersMetadataCap(t, n, "draft/metadata-3", "before-connect,")

	foo, _ := guest(t, n, "m3foo", "draft/metadata-3", "batch")
	bar, _ := guest(t, n, "m3bar", "draft/metadata-3", "batch")
	old, _ := guest(t, n, "m3old", "draft/metadata-2", "batch")

	drain(t, foo) // the registration's batch of the user's own (no) keys
	sendLines(t, foo, "METADATA * GET display-name avatar")
	start, body := batchBody(t, foo, "metadata")
	if start.Param(2) != "m3foo" || len(body) != 2 || strings.Join(body[0].Params[:3], " ") != "m3foo m3foo display-name" ||
		strings.Join(body[1].Params[:3], " ") != "m3foo m3foo avatar" || body[0].Command != "766" || body[1].Command != "766" {
		t.Fatalf("GET of two unset keys: %v", lines(body))
	}

	sendLines(t, bar, "METADATA * SUB avatar display-name")
	expectParams(t, bar, "770", "m3bar", "avatar", "display-name")
	sendLines(t, old, "METADATA * SUB avatar display-name")
	expectParams(t, old, "770", "m3old", "avatar display-name")

	// Keys set before a JOIN follow its replies, as 761.
	sendLines(t, foo, "METADATA * SET display-name :Foo The First")
	expectParams(t, foo, "761", "m3foo", "m3foo", "display-name", "*", "Foo The First")
	joinChannels(t, foo, "#m3")
	sendLines(t, bar, "JOIN #m3")
	expectEndOfNames(t, bar, "#m3")
	expectParams(t, bar, "761", "m3bar", "m3foo", "display-name", "*", "Foo The First")
	joinChannels(t, old, "#m3")
	drain(t, foo)

	sendLines(t, foo, "METADATA * SET display-name :Foo The Second")
	expectParams(t, foo, "761", "m3foo", "m3foo", "display-name", "*", "Foo The Second")
	expectParams(t, bar, "761", "m3bar", "m3foo", "display-name", "*", "Foo The Second")
	if m := expectFrom(t, old, "m3foo", "METADATA"); strings.Join(m.Params, " ") != "m3foo display-name * Foo The Second" {
		t.Fatalf("draft/metadata-2 notification %q", m.String())
	}
	sendLines(t, foo, "METADATA * SET display-name")
	expectParams(t, foo, "766", "m3foo", "m3foo", "display-name", "key not set")
	expectParams(t, bar, "766", "m3bar", "m3foo", "display-name", "key not set")

	for _, value := range []string{"invalid UTF-8 ->\xc3<-", strings.Repeat("abcd", 120)} {
		sendLines(t, foo, "METADATA * SET display-name :"+value)
		if got := drain(t, foo); len(got) != 1 || strings.Join(got[0].Params[:3], " ") != "METADATA INVALID_VALUE display-name" || len(got[0].Params) != 4 {
			t.Fatalf("SET of %q: %v", value, lines(got))
		}
		sendLines(t, old, "METADATA * SET display-name :"+value)
		if m := expect(t, old, "FAIL", "METADATA"); strings.Join(m.Params[:4], " ") != "METADATA VALUE_INVALID * display-name" {
			t.Fatalf("draft/metadata-2 SET of %q: %q", value, m.String())
		}
		refuteMsg(t, drain(t, bar), "761")
	}
}

// TestIRCMetadata3BeforeConnect follows draft/metadata-3's before-connect: a client may set its
// own keys (target *) before registration; registration applies them and sends them in the
// burst's metadata batch, and other users read them. Other METADATA before registration is 451.
func TestIRCMetadata3BeforeConnect(t *testing.T) {
	n := startNode(t, t.TempDir(), func(c *Config) { c.Metadata3 = true })
	c := dial(t, n)
	sendLines(t, c, "CAP LS 302")
	expectCapLS(t, c)
	sendLines(t, c, "CAP REQ :draft/metadata-3 batch")
	expect(t, c, "CAP", "ACK")
	sendLines(t, c, "METADATA * SET display-name :Early Bird")
	expectParams(t, c, "761", "*", "*", "display-name", "*", "Early Bird")
	sendLines(t, c, "METADATA * SET Bad:Key :x")
	expect(t, c, "FAIL", "METADATA", "KEY_INVALID", "Bad:Key")
	sendLines(t, c, "METADATA * SET pronouns :\xff")
	expect(t, c, "FAIL", "METADATA", "INVALID_VALUE", "pronouns")
	sendLines(t, c, "METADATA #early SET topic :x")
	expect(t, c, "451")

	sendLines(t, c, "NICK early", "USER early 0 * :early", "CAP END")
	expect(t, c, "001")
	start, body := batchBody(t, c, "metadata")
	if start.Param(2) != "early" || len(body) != 1 || strings.Join(body[0].Params, " ") != "early early display-name * Early Bird" {
		t.Fatalf("burst metadata batch %v: %v", start.Params, lines(body))
	}
	other, _ := guest(t, n, "late", "draft/metadata-3", "batch")
	drain(t, other)
	sendLines(t, other, "METADATA early GET display-name pronouns")
	_, body = batchBody(t, other, "metadata")
	if len(body) != 2 || body[0].Param(4) != "Early Bird" || body[1].Command != "766" {
		t.Fatalf("GET of the keys set before connecting: %v", lines(body))
	}
}

// TestIRCCapsOffUnlessConfigured: draft/metadata-3 and draft/account-registration are neither
// offered nor granted unless configured (a client may only enable what CAP LS lists).
func TestIRCCapsOffUnlessConfigured(t *testing.T) {
	n := startNode(t, t.TempDir(), nil)
	for _, name := range []string{"draft/metadata-3", "draft/account-registration"} {
		c := dial(t, n)
		sendLines(t, c, "CAP LS 302")
		if _, ls := expectCapLS(t, c); slices.ContainsFunc(ls, func(s string) bool { return strings.HasPrefix(s, name) }) {
			t.Fatalf("CAP LS %q offers %s", ls, name)
		}
		sendLines(t, c, "CAP REQ :batch "+name)
		expectParams(t, c, "CAP", "*", "NAK", "batch "+name)
	}
}
