package exchange

import (
	"context"
	"time"
)

// When a node pulls. The streams carry an origin's logs as they grow; the pull is the catch-up
// for what no healthy stream carries. A node pulls an origin at start, on Kick (membership
// changed, or the stored stream dropped items), and every PullEvery only the logs that no healthy
// stream from that origin carries: a stream is healthy while it is open and a frame or heartbeat
// came within streamReadIdle (three heartbeats). So a cluster whose streams carry every log
// makes no pull requests while idle, and a receiver whose stream died (closed, or silent for
// three heartbeats) gets the rows from the next pull, which the origin always answers with rows.

// logSet is a set of an origin's logs.
type logSet uint8

const (
	setMessages logSet = 1 << iota
	setDeletes
	setReactions
	allLogs = setMessages | setDeletes | setReactions
)

func logsOf(logs ...Log) logSet {
	var s logSet
	for _, l := range logs {
		switch l {
		case LogMessages:
			s |= setMessages
		case LogDeletes:
			s |= setDeletes
		case LogReactions:
			s |= setReactions
		}
	}
	return s
}

func (s logSet) has(l Log) bool { return s&logsOf(l) != 0 }

// inStream is what this node knows of the streams it receives from one origin.
type inStream struct {
	open  int       // streams from the origin being received now
	logs  logSet    // the logs the latest of them carries
	heard time.Time // its opening, or its latest frame or heartbeat
}

// streamOpen records that a stream from origin opened and carries logs; the returned func
// records its end. The receiving end of a stream calls it once, for the stream's life.
func (x *Exchange) streamOpen(origin string, logs ...Log) (closed func()) {
	x.mu.Lock()
	defer x.mu.Unlock()
	in := x.inbound[origin]
	if in == nil {
		in = &inStream{}
		x.inbound[origin] = in
	}
	in.open++
	in.logs = logsOf(logs...)
	in.heard = time.Now()
	return func() {
		x.mu.Lock()
		defer x.mu.Unlock()
		in.open--
	}
}

// heard records that a stream from origin delivered a verified frame (heartbeats included).
func (x *Exchange) heard(origin string) {
	now := time.Now()
	x.mu.Lock()
	defer x.mu.Unlock()
	if in := x.inbound[origin]; in != nil {
		in.heard = now
	}
}

// streamedLogs is the set of origin's logs a healthy stream from it carries now (none when no
// stream from it is open, or it was silent for streamReadIdle).
func (x *Exchange) streamedLogs(origin string, now time.Time) logSet {
	x.mu.Lock()
	defer x.mu.Unlock()
	in := x.inbound[origin]
	if in == nil || in.open <= 0 || now.Sub(in.heard) >= streamReadIdle {
		return 0
	}
	return in.logs
}

func (x *Exchange) pullLoop() {
	defer x.wg.Done()
	t := time.NewTicker(x.cfg.PullEvery)
	defer t.Stop()
	x.PullAll(x.ctx)
	for {
		select {
		case <-x.ctx.Done():
			return
		case <-t.C:
			x.pullRound(x.ctx, false)
		case <-x.kick:
			x.PullAll(x.ctx)
		}
	}
}

// PullAll runs one catch-up round of every log against every peer.
func (x *Exchange) PullAll(ctx context.Context) { x.pullRound(ctx, true) }

// pullRound pulls from every peer: every log (all), or only those no healthy stream carries.
func (x *Exchange) pullRound(ctx context.Context, all bool) {
	x.pullMu.Lock()
	defer x.pullMu.Unlock()
	x.pullRounds.Add(1)
	now := time.Now()
	for _, p := range x.cfg.Peers() {
		x.outbox(p.DID) // this node's stream to p runs from the start, not from its first message
		logs := allLogs
		if !all {
			logs &^= x.streamedLogs(p.DID, now)
		}
		if logs == 0 {
			continue
		}
		x.safely("pull", func() {
			err := x.pull(ctx, p, logs)
			if err != nil && ctx.Err() == nil {
				x.cfg.Logger.Debug("pull failed", "peer", p.DID, "err", err)
			}
			x.pulled(p.DID, err)
		}, "peer", p.DID)
	}
}
