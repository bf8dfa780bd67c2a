package load

import (
	"fmt"
	"slices"
	"strings"
)

// B14's accounting is per user, not per connection. A user is one member
// slot of a channel: its first connection and, after the kill, the
// connection that replaced it. What a user is owed is what a real client
// would end up showing: every acknowledged message sent to the channel
// after the user's first JOIN completed (other than the user's own),
// whether it arrived live on either connection or from the CHATHISTORY
// catch-up after the reconnection (historyFetch). A message that reaches a
// user twice is a duplicate only when both receipts were live (on one
// connection, or once on each): a history page that repeats a message
// already read live is the overlap every client removes by msgid.

// deliveryUser is one member slot and its connections, oldest first.
type deliveryUser struct {
	ch    *flowChannel
	conns []*flowClient
}

// current is the user's latest connection.
func (u deliveryUser) current() *flowClient { return u.conns[len(u.conns)-1] }

// since is when the user's first JOIN completed.
func (u deliveryUser) since() int64 { return u.conns[0].joinedAt }

// sent says whether message seq was written by one of the user's
// connections.
func (u deliveryUser) sent(seq int) bool {
	from := int(u.ch.senders[seq])
	for _, c := range u.conns {
		if c.index == from {
			return true
		}
	}
	return false
}

// received says whether any of the user's connections got seq, live or
// from history.
func (u deliveryUser) received(seq int) bool {
	for _, c := range u.conns {
		if c.has(seq) {
			return true
		}
	}
	return false
}

// deliveryUsers lists the users of every channel: each current member and
// the connections it replaced.
func deliveryUsers(channels []*flowChannel) []deliveryUser {
	var out []deliveryUser
	for _, ch := range channels {
		ch.mu.RLock()
		for _, m := range ch.members {
			var conns []*flowClient
			for c := m; c != nil; c = c.prev {
				conns = append(conns, c)
			}
			slices.Reverse(conns)
			out = append(out, deliveryUser{ch: ch, conns: conns})
		}
		ch.mu.RUnlock()
	}
	return out
}

// ownedSeq is one message a user is owed.
type ownedSeq struct {
	user int // index into the users
	seq  int
}

// owedTo calls f for every delivery owed: each acknowledged message of a
// user's channel sent after the user's first JOIN completed and not by
// the user, for the users whose current connection is open.
func owedTo(users []deliveryUser, f func(o ownedSeq, u deliveryUser, sentAt int64)) {
	for i, u := range users {
		if !u.current().alive.Load() {
			continue
		}
		ch, since := u.ch, u.since()
		for seq := range ch.sentAt {
			sentAt := ch.sentAt[seq].Load()
			if sentAt == 0 {
				break
			}
			if sentAt < 0 || ch.ackedAt[seq].Load() == 0 || sentAt <= since || u.sent(seq) {
				continue
			}
			f(ownedSeq{i, seq}, u, sentAt)
		}
	}
}

// userDeliveries counts the deliveries owed and those that arrived.
func userDeliveries(users []deliveryUser) (owed, delivered int64) {
	owedTo(users, func(o ownedSeq, u deliveryUser, _ int64) {
		owed++
		if u.received(o.seq) {
			delivered++
		}
	})
	return owed, delivered
}

// echoesPending counts the messages sent on a connection that is still
// open whose echo has not come back yet. Such a message becomes owed the
// moment its echo arrives, so the drain must wait for it: counted before
// its echo, it is owed to nobody and its deliveries still in flight are
// never compared; counted after, they are. A message whose sender's
// connection ended is never echoed and never owed.
func echoesPending(channels []*flowChannel, clients []*flowClient) int {
	open := make(map[int]bool, len(clients))
	for _, c := range clients {
		if c.alive.Load() {
			open[c.index] = true
		}
	}
	n := 0
	for _, ch := range channels {
		for seq := range ch.sentAt {
			sentAt := ch.sentAt[seq].Load()
			if sentAt == 0 {
				break
			}
			if sentAt > 0 && ch.ackedAt[seq].Load() == 0 && open[int(ch.senders[seq])] {
				n++
			}
		}
	}
	return n
}

// catchUpsPending counts the reconnected users whose history catch-up has
// not ended.
func catchUpsPending(users []deliveryUser) int {
	n := 0
	for _, u := range users {
		if f := u.current().fetch; f != nil && u.current().alive.Load() && !f.finished() {
			n++
		}
	}
	return n
}

// phaseOf names when, relative to the kill and the restart, a message was
// sent (unix ns); killedAt and restartedAt are unix ns too.
func phaseOf(sentAt, killedAt, restartedAt int64) string {
	switch {
	case killedAt == 0 || sentAt < killedAt:
		return "before the kill"
	case restartedAt == 0 || sentAt < restartedAt:
		return "while the node was down"
	default:
		return "after the restart"
	}
}

// memberStateAt says where a user was when a message was sent: connected
// through one of its connections (which, and whether it was the first),
// or between them.
func memberStateAt(u deliveryUser, sentAt int64) string {
	for i, c := range u.conns {
		ended := c.endedAt.Load()
		if c.joinedAt <= sentAt && (ended == 0 || sentAt < ended) {
			if i == 0 {
				return "connected"
			}
			return "reconnected"
		}
	}
	return "disconnected"
}

// classKey builds the key a delivery anomaly is counted under.
func classKey(parts ...string) string { return strings.Join(parts, ", ") }

// nodeLabel names node i, marking the killed one.
func nodeLabel(names []string, i, killed int) string {
	name := fmt.Sprintf("node %d", i)
	if i >= 0 && i < len(names) && names[i] != "" {
		name = names[i]
	}
	if i == killed {
		name += " (killed)"
	}
	return name
}
