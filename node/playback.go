package node

import "context"

// mountPlayback files every applied entry's channel events (JOIN, PART, QUIT, KICK, MODE, TOPIC,
// NICK, RENAME) in the event store and lets the IRC edge replay them to draft/event-playback
// clients (gateway/irc/playback.go). Nothing to do without an event store.
func (n *Node) mountPlayback(context.Context) error {
	if n.events == nil || n.irc == nil {
		return nil
	}
	return n.irc.EnablePlayback(n.events, n.streams)
}
