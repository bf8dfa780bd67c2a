package exchange

import "context"

// Queued is the number of pushed items waiting for the peer with DID did (0 when it has no
// queue yet): the push lag the assistance tools report.
func (x *Exchange) Queued(did string) int {
	x.mu.Lock()
	q := x.queues[did]
	x.mu.Unlock()
	return len(q)
}

// Cursors reads this node's cursors over an origin node's messages, deletes and reactions.
func (x *Exchange) Cursors(ctx context.Context, origin string) (messages, deletes, reactions int64, err error) {
	if messages, err = ReadCursor(ctx, x.cfg.Store, inCursor(origin, LogMessages)); err != nil {
		return
	}
	if deletes, err = ReadCursor(ctx, x.cfg.Store, inCursor(origin, LogDeletes)); err != nil {
		return
	}
	reactions, err = ReadCursor(ctx, x.cfg.Store, inCursor(origin, LogReactions))
	return
}
