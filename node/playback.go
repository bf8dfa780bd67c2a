package node

import (
	"context"

	"github.com/palaver-chat/palaver/federation/exchange"
)

// mountPlayback files every applied entry's channel events (JOIN, PART, QUIT, KICK, MODE, TOPIC,
// NICK, RENAME) in the event store and lets the IRC edge replay them to draft/event-playback
// clients (gateway/irc/playback.go). Nothing to do without an event store.
func (n *Node) mountPlayback(context.Context) error {
	if n.events == nil || n.irc == nil {
		return nil
	}
	return n.irc.EnablePlayback(n.events, n.streams)
}

// playbackEvents are the channel events the exchange serves to the peers and fills in from them
// (nil without an event store or an IRC edge).
func (n *Node) playbackEvents() exchange.EventStore {
	if n.events == nil || n.irc == nil {
		return nil
	}
	return n.events
}

// playbackGap names the last entry whose channel events the IRC edge did not file itself (nil
// without event playback).
func (n *Node) playbackGap() func() uint64 {
	if n.events == nil || n.irc == nil {
		return nil
	}
	return n.irc.PlaybackGap
}
