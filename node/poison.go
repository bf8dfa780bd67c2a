package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/limits"
)

// StorePoison stores, as this node's own rows, items no peer can accept, and tells the exchange:
// a message over the limits of one item (node/limits), a message with a malformed venue, a delete
// and a reaction whose tags are over the limits. The streams and pulls carry them like any row;
// every receiver records them as dead letters and moves on. It is the testcluster's poison fault,
// and refuses to run on a node without Config.Faults. It returns the number of rows stored.
func (n *Node) StorePoison(ctx context.Context, venue string) (int, error) {
	if !n.faults.injected() {
		return 0, errors.New("poison: only a node with injected faults stores poison")
	}
	origin, now := n.cfg.NodeName, time.Now()
	msg := func(venue, text string) *eventstore.Message {
		return &eventstore.Message{MsgID: ulid.Make().String(), Venue: venue, Command: "PRIVMSG", Sender: "poison!p@nemesis",
			SenderNick: "poison", Text: text, Time: now, Origin: origin}
	}
	big, bad := msg(venue, strings.Repeat("x", limits.TextBytes+1)), msg(strings.TrimLeft(venue, "#&"), "a malformed venue")
	if err := n.events.Append(ctx, big, bad); err != nil {
		return 0, fmt.Errorf("poison: %w", err)
	}
	n.exchange.Publish(*big)
	n.exchange.Publish(*bad)
	tags := map[string]string{"+poison": strings.Repeat("t", limits.TagBytes)}
	by := eventstore.Deleter{Sender: "poison!p@nemesis", Tags: tags}
	r := eventstore.ReactionEvent{EventID: ulid.Make().String(), Origin: origin, Root: big.MsgID, Reactor: "nick:poison",
		ReactorNick: "poison", Emoji: "x", At: now, Venue: venue, Sender: "poison!p@nemesis", Tags: tags}
	if _, err := n.events.FileReaction(ctx, r); err != nil {
		return 2, fmt.Errorf("poison reaction: %w", err)
	}
	n.exchange.PublishReaction(r)
	if err := n.events.DeleteAt(ctx, big.MsgID, now, origin, by); err != nil {
		return 3, fmt.Errorf("poison delete: %w", err)
	}
	n.exchange.Kick() // the streams read the deletes log at their next heartbeat; the pulls now
	return 4, nil
}
