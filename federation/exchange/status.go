package exchange

import (
	"context"
	"time"
)

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

// PeerReplication is how this node's copy of one cluster peer's logs stands.
type PeerReplication struct {
	Peer string `json:"peer"` // the node's DID
	// Cursors: the last seq of the peer's messages, deletes and reactions stored here.
	Messages  int64 `json:"messages"`
	Deletes   int64 `json:"deletes"`
	Reactions int64 `json:"reactions"`
	// Stream: a healthy stream from the peer carries its logs now.
	Stream bool `json:"stream"`
	// PullError: why the latest pull from the peer failed, if it did. It may name cluster
	// addresses, so it is not part of the public health answer (diagnose_sync shows it to a
	// signed-in caller).
	PullError string `json:"-"`
	// Behind: no healthy stream carries the peer's logs and the latest pull failed, so this node
	// may lack rows the peer has.
	Behind bool `json:"behind"`
	// DeadLetters: items from the peer recorded as dead letters (deadletters.go).
	DeadLetters int64 `json:"dead_letters"`
}

// pulled records the outcome of a pull from peer.
func (x *Exchange) pulled(peer string, err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err == nil {
		delete(x.pullErrs, peer)
		return
	}
	x.pullErrs[peer] = truncate(err.Error(), 200)
}

// Replication reports this node's copy of each live cluster peer's logs, by DID.
func (x *Exchange) Replication(ctx context.Context) ([]PeerReplication, error) {
	type counter interface {
		DeadLetterCounts(ctx context.Context) (map[string]int64, error)
	}
	var dead map[string]int64
	if s, ok := x.cfg.Store.(counter); ok {
		var err error
		if dead, err = s.DeadLetterCounts(ctx); err != nil {
			return nil, err
		}
	}
	now := time.Now()
	var out []PeerReplication
	for _, p := range x.cfg.Peers() {
		r := PeerReplication{Peer: p.DID, DeadLetters: dead[p.DID], Stream: x.streamedLogs(p.DID, now) == allLogs}
		var err error
		if r.Messages, r.Deletes, r.Reactions, err = x.Cursors(ctx, Name(p.DID)); err != nil {
			return nil, err
		}
		x.mu.Lock()
		r.PullError = x.pullErrs[p.DID]
		x.mu.Unlock()
		r.Behind = !r.Stream && r.PullError != ""
		out = append(out, r)
	}
	return out, nil
}
