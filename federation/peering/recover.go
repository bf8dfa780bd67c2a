package peering

import (
	"context"
	"fmt"
	"runtime/debug"
)

// outcomeFailed: applying the item panicked; it is dropped (see guarded).
const outcomeFailed outcome = "internal-error"

// guarded applies one inbound item. A panic there is logged with its stack and the item is
// dropped (outcomeFailed): the rest of the envelope is applied, and the peer, whose ack covers
// the item, does not send it again and again.
func (f *Federation) guarded(peer Peer, what string, apply func() (outcome, error)) (o outcome, err error) {
	defer func() {
		if r := recover(); r != nil {
			f.log.Error("panic while applying "+what+" from a peer; dropped", "peer", peer.DID, "panic", r,
				"stack", string(debug.Stack()))
			o, err = outcomeFailed, nil
		}
	}()
	return apply()
}

// flushGuarded is flush for the outbox's loop: a panic while collecting or sending is logged with
// its stack and counts as a failed round, retried with the loop's capped backoff.
func (o *outbox) flushGuarded(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			o.f.log.Error("panic while sending to a peer; retrying", "peer", o.peer.DID, "panic", r,
				"stack", string(debug.Stack()))
			err = fmt.Errorf("send to %s: panic: %v", o.peer.DID, r)
		}
	}()
	return o.flush(ctx)
}
