package node

import (
	"fmt"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/node/limits"
)

// multilineOf builds a draft/multiline batch of n lines whose text (newlines included) is exactly
// size bytes, and returns its lines and the text.
func multilineOf(ref, target string, n, size int) ([]string, string) {
	per := (size - (n - 1)) / n
	extra := size - (n - 1) - per*n
	out := []string{"BATCH +" + ref + " draft/multiline " + target}
	var text []string
	for i := range n {
		l := per
		if i < extra {
			l++
		}
		line := fmt.Sprintf("%03d ", i) + strings.Repeat(string(rune('a'+i%26)), l-4)
		text = append(text, line)
		out = append(out, "@batch="+ref+" PRIVMSG "+target+" :"+line)
	}
	return append(out, "BATCH -"+ref), strings.Join(text, "\n")
}

// A large multiline message, well inside what the edge advertises, reaches every node, and so
// does every message sent after it: one large item never stops a node's replication.
func TestLargeMultilineCrossesEveryNode(t *testing.T) {
	nodes := startCluster(t)
	caps := []string{"draft/multiline", "batch", "message-tags"}
	x, _ := guest(t, nodes[0], "bigmlx", caps...)
	y, _ := guest(t, nodes[1], "bigmly", caps...)
	joinChannels(t, x, "#bigml")
	joinChannels(t, y, "#bigml")
	batch, text := multilineOf("big", "#bigml", 74, 29673)
	if len(text) != 29673 {
		t.Fatalf("built %d bytes", len(text))
	}
	sendLines(t, x, batch...)
	start, body := batchBody(t, y, "draft/multiline")
	if got := strings.Join(texts(body), "\n"); got != text {
		t.Fatalf("multiline on node 2: %d bytes, want %d", len(got), len(text))
	}
	sendLines(t, x, "PRIVMSG #bigml :after the large one")
	expect(t, y, "PRIVMSG", "#bigml", "after the large one")
	for _, n := range nodes {
		eventually(t, "the large message stored on "+n.cfg.NodeName, func() bool {
			m, err := n.events.Get(testCtx(t), start.Tags["msgid"])
			return err == nil && m.Text == text
		})
	}

	// The largest message the edge accepts crosses too; one byte more, or one line more, is
	// refused at the edge, and nothing is stored.
	batch, text = multilineOf("max", "#bigml", limits.MultilineLines, limits.MultilineBytes)
	sendLines(t, x, batch...)
	_, body = batchBody(t, y, "draft/multiline")
	if got := strings.Join(texts(body), "\n"); got != text {
		t.Fatalf("the largest multiline on node 2: %d bytes, want %d", len(got), len(text))
	}
	batch, _ = multilineOf("over", "#bigml", limits.MultilineLines, limits.MultilineBytes+1)
	sendLines(t, x, batch...)
	expect(t, x, "FAIL", "BATCH", "MULTILINE_MAX_BYTES")
	batch, _ = multilineOf("long", "#bigml", limits.MultilineLines+1, 1000)
	sendLines(t, x, batch...)
	expect(t, x, "FAIL", "BATCH", "MULTILINE_MAX_LINES")
	sendLines(t, x, "PRIVMSG #bigml :last")
	expect(t, y, "PRIVMSG", "#bigml", "last")

	// Every node reports its copies of the others healthy: no peer behind, no dead letter.
	for _, n := range nodes {
		var h rest.Health
		getJSON(t, n, "/api/v1/health", &h)
		if h.Replication == nil || !h.Replication.OK || len(h.Replication.Peers) != len(nodes)-1 {
			t.Fatalf("health of %s: replication %+v", n.cfg.NodeName, h.Replication)
		}
	}
}
