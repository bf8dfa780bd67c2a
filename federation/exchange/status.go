package exchange

// Queued is the number of pushed items waiting for the peer with DID did (0 when it has no
// queue yet): the push lag the assistance tools report.
func (x *Exchange) Queued(did string) int {
	x.mu.Lock()
	q := x.queues[did]
	x.mu.Unlock()
	return len(q)
}

// CursorKeys are the store cursor keys of an origin node's messages, deletes and reactions.
func CursorKeys(origin string) (messages, deletes, reactions string) {
	return origin, deletionCursor(origin), reactionCursor(origin)
}
