package exchange

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/limits"
)

// maxTags is a tag set at the limits of one item: limits.Tags tags of limits.TagBytes in all,
// its values of a character JSON escapes to six bytes.
func maxTags() map[string]string {
	tags := map[string]string{}
	per := limits.TagBytes / limits.Tags
	for i := range limits.Tags {
		k := fmt.Sprintf("+k%03d", i)
		n := per - len(k)
		if i == 0 {
			n += limits.TagBytes - per*limits.Tags
		}
		tags[k] = strings.Repeat("<", n)
	}
	return tags
}

// The largest item of each kind the edge accepts and a receiver keeps, with every field at its
// bound and a text of characters JSON escapes (the pull's worst case).
func maxEvent(seq int64) Event {
	name := strings.Repeat("n", limits.NameBytes)
	return Event{OriginSeq: seq, MsgID: strings.Repeat("m", limits.MsgIDBytes), Venue: "#" + strings.Repeat("v", limits.VenueBytes-1),
		Command: "PRIVMSG", Sender: name, SenderNick: name, SenderDID: name, Text: strings.Repeat("<", limits.TextBytes),
		Tags: maxTags(), TimeMS: math.MaxInt64, ReplacesMsgID: strings.Repeat("r", limits.MsgIDBytes), Incarnation: name,
		Public: true, Status: "@"}
}

func maxDeletion(seq int64) eventstore.Deletion {
	name := strings.Repeat("n", limits.NameBytes)
	return eventstore.Deletion{Seq: seq, RootMsgID: strings.Repeat("m", limits.MsgIDBytes), At: time.UnixMilli(math.MaxInt64).UTC(),
		Venue: "#" + strings.Repeat("v", limits.VenueBytes-1), Deleter: eventstore.Deleter{Sender: name, SenderDID: name, Tags: maxTags()}}
}

func maxReaction(seq int64) eventstore.ReactionEvent {
	name := strings.Repeat("n", limits.NameBytes)
	return eventstore.ReactionEvent{Seq: seq, EventID: strings.Repeat("e", limits.MsgIDBytes), Root: strings.Repeat("m", limits.MsgIDBytes),
		Reactor: name, ReactorNick: name, Emoji: strings.Repeat("<", eventstore.MaxEmojiBytes), At: time.UnixMilli(math.MaxInt64).UTC(),
		Venue: "#" + strings.Repeat("v", limits.VenueBytes-1), Sender: name, SenderDID: name, Tags: maxTags()}
}

// TestLimitsFitEveryHop: every item at the limits of node/limits is accepted by a receiver, one
// byte more is refused, and a full frame or answer of such items fits every hop, as encoded: the
// cluster stream's frame, the pull's answer, the stream to a configured server.
func TestLimitsFitEveryHop(t *testing.T) {
	if limits.TextBytes < limits.MultilineBytes || limits.TextBytes < limits.LineBytes {
		t.Fatalf("an item's text (%d bytes) is shorter than what the edge accepts", limits.TextBytes)
	}
	if limits.TagBytes < limits.ClientTagBytes+512 {
		t.Fatalf("an item's tags (%d bytes) leave no room for the server's beside the client's %d", limits.TagBytes, limits.ClientTagBytes)
	}
	e, d, r := maxEvent(1), maxDeletion(1), maxReaction(1)
	if err := e.validate(); err != nil {
		t.Fatalf("the largest event is refused: %v", err)
	}
	if err := validDeletion(d); err != nil {
		t.Fatalf("the largest deletion is refused: %v", err)
	}
	if err := validReaction(r); err != nil {
		t.Fatalf("the largest reaction is refused: %v", err)
	}
	over := []struct {
		name string
		err  error
	}{
		{"text", func() error { e := maxEvent(1); e.Text += "x"; return e.validate() }()},
		{"tag bytes", func() error { e := maxEvent(1); e.Tags["+k000"] += "x"; return e.validate() }()},
		{"tag count", func() error { e := maxEvent(1); e.Tags["+z"] = ""; return e.validate() }()},
		{"deletion tags", func() error { d := maxDeletion(1); d.Tags["+k000"] += "x"; return validDeletion(d) }()},
		{"reaction tags", func() error { r := maxReaction(1); r.Tags["+k000"] += "x"; return validReaction(r) }()},
	}
	for _, o := range over {
		if o.err == nil || reasonOf(o.err) != ReasonOversize {
			t.Errorf("one byte over the %s: %v, want an oversize refusal", o.name, o.err)
		}
	}

	// The cluster stream: a frame takes a page of each log.
	page := limits.PageItems
	b := streamBatch{After: 0, Last: int64(page), Dels: span{0, int64(page)}, Reacts: span{0, int64(page)}}
	for i := range page {
		b.Events = append(b.Events, maxEvent(int64(i+1)))
		b.Deletions = append(b.Deletions, maxDeletion(int64(i+1)))
		b.Reactions = append(b.Reactions, maxReaction(int64(i+1)))
	}
	frame := appendBatch(frameSigningInput(strings.Repeat("0", 32), nil), b)
	if n := len(frame) + ed25519.SignatureSize; n > maxFrame {
		t.Fatalf("a stream frame of %d items a log at their largest is %d bytes, over the frame bound %d", page, n, maxFrame)
	}
	if page > maxFrameEvents {
		t.Fatalf("a page of %d items is over a frame section's %d", page, maxFrameEvents)
	}
	if _, err := decodeBatch(appendBatch(nil, b)); err != nil {
		t.Fatalf("a full frame at the limits does not decode: %v", err)
	}
	t.Logf("cluster stream: a frame of %d items a log at their largest is %d bytes (bound %d)", page, len(frame), maxFrame)

	// The stream to a configured server: serverFrameItems items in all.
	sb := streamBatch{Last: serverFrameItems}
	for i := range serverFrameItems {
		sb.Events = append(sb.Events, maxEvent(int64(i+1)))
	}
	if n := len(appendBatch(frameSigningInput(strings.Repeat("0", 32), nil), sb)) + ed25519.SignatureSize; n > maxServerFrame {
		t.Fatalf("a server frame of %d items at their largest is %d bytes, over %d", serverFrameItems, n, maxServerFrame)
	}

	// The pull: an answer of a page of each log is cut to fit, and moves on by at least one row a
	// log.
	pb := Batch{Origin: "did:web:" + strings.Repeat("o", limits.NameBytes), Events: b.Events}
	for i := range b.Deletions {
		pb.Deletions = append(pb.Deletions, pullDeletionOf(b.Deletions[i]))
		pb.Reactions = append(pb.Reactions, pullReactionOf(b.Reactions[i]))
	}
	fitPull(&pb, limits.PullBytes-pullMargin)
	body, err := json.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	if len(body) > limits.PullBytes || len(body) > maxBody {
		t.Fatalf("a pull answer is %d bytes, over %d", len(body), limits.PullBytes)
	}
	if len(pb.Events) == 0 || len(pb.Deletions) == 0 || len(pb.Reactions) == 0 || !pb.More {
		t.Fatalf("a cut pull answer: %d events, %d deletions, %d reactions, more=%v", len(pb.Events), len(pb.Deletions), len(pb.Reactions), pb.More)
	}
	t.Logf("pull: %d events, %d deletions, %d reactions at their largest in %d bytes (bound %d)", len(pb.Events),
		len(pb.Deletions), len(pb.Reactions), len(body), limits.PullBytes)
}
