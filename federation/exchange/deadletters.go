package exchange

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/eventstore"
)

// Dead letters. No item holds back the items after it: an item a receiver cannot accept is
// recorded as a dead letter (the store's dead_letters table, when the store keeps one; the log
// otherwise), counted in palaver_exchange_dead_letters_total{peer,reason}, and passed over: the
// receiver's cursor over that log moves past it as past an item it stored. The rule for each kind
// of refusal:
//
//   - too large or malformed (Event.validate, validReaction, validDeletion):
//     reason "oversize" or "malformed";
//   - refused by an acceptance rule (chat.Outcome: not-author, not-op, malformed, unauthorised,
//     not-allowed, no-root): the outcome is the reason.
//
// Only an item that waits for its message (chat.Wait) stops a log's walk: it is applied once its
// message arrives. On the sender's side a frame takes every row of its range; the receiver's
// decoder bounds a frame (limits.StreamFrameBytes) well above a page of items at their maximum,
// so a page of legitimate items always fits, and a pull's answer stops before the row that would
// take it over limits.PullBytes (the puller asks again after it).

// Dead-letter reasons that are not an acceptance outcome.
const (
	ReasonOversize  = "oversize"
	ReasonMalformed = "malformed"
)

var errOversize = errors.New("oversize")

// deadLetterStore is a store that keeps dead letters (eventstore.Store).
type deadLetterStore interface {
	AddDeadLetters(ctx context.Context, ds []eventstore.DeadLetter) error
}

func newDeadLetterCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "palaver_exchange_dead_letters_total",
		Help: "Items a peer sent that this node could not accept (recorded and passed over), by peer and reason.",
	}, []string{"peer", "reason"})
}

// deadLetterReasons are the reasons a peer's item can be refused for: a live peer's counter
// exports each of them from 0, so an alert on its increase sees the first dead letter too (a
// series that appears at 1 has no increase).
var deadLetterReasons = []string{ReasonOversize, ReasonMalformed, string(chat.NotAuthor), string(chat.NotOp),
	string(chat.Unsigned), string(chat.NoRoot), string(NotAllowed)}

// Metrics is the exchange's collector: palaver_exchange_dead_letters_total, with a series for
// every live peer and reason.
func (x *Exchange) Metrics() prometheus.Collector { return deadLetterMetrics{x} }

type deadLetterMetrics struct{ x *Exchange }

func (m deadLetterMetrics) Describe(ch chan<- *prometheus.Desc) { m.x.deadLetters.Describe(ch) }

func (m deadLetterMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, p := range m.x.cfg.Peers() {
		for _, reason := range deadLetterReasons {
			m.x.deadLetters.WithLabelValues(p.DID, reason)
		}
	}
	m.x.deadLetters.Collect(ch)
}

// reasonOf is the dead-letter reason of a validation error.
func reasonOf(err error) string {
	if errors.Is(err, errOversize) {
		return ReasonOversize
	}
	return ReasonMalformed
}

// refused reports whether an acceptance outcome is a refusal (neither stored, a duplicate, nor
// waiting for its message).
func refused(o chat.Outcome) bool {
	return o != "" && o != chat.Accepted && o != chat.Duplicate && o != chat.Wait
}

// recordDeadLetters records and counts items refused from peer. A store failure is returned: the
// caller then does not move its cursor, and the items are refused again on the next try.
func (x *Exchange) recordDeadLetters(ctx context.Context, peer string, ds []eventstore.DeadLetter) error {
	if len(ds) == 0 {
		return nil
	}
	now := x.cfg.Now()
	for i := range ds {
		ds[i].Peer = peer
		if ds[i].Time.IsZero() {
			ds[i].Time = now
		}
		ds[i].Detail = truncate(ds[i].Detail, 200)
		x.cfg.Logger.Warn("dead letter: an item a peer sent was refused and passed over", "peer", peer, "origin", ds[i].Origin,
			"log", ds[i].Log, "seq", ds[i].Seq, "msgid", truncate(ds[i].MsgID, 64), "reason", ds[i].Reason, "detail", ds[i].Detail)
	}
	if s, ok := x.cfg.Store.(deadLetterStore); ok {
		if err := s.AddDeadLetters(ctx, ds); err != nil {
			return fmt.Errorf("record dead letters: %w", err)
		}
	}
	for _, d := range ds {
		x.deadLetters.WithLabelValues(peer, d.Reason).Inc()
	}
	return nil
}

// DeadLetters lists the last limit dead letters from peer (every peer when empty), newest first;
// none when the store keeps no table.
func (x *Exchange) DeadLetters(ctx context.Context, peer string, limit int) ([]eventstore.DeadLetter, error) {
	type lister interface {
		DeadLetters(ctx context.Context, peer string, limit int) ([]eventstore.DeadLetter, error)
	}
	if s, ok := x.cfg.Store.(lister); ok {
		return s.DeadLetters(ctx, peer, limit)
	}
	return nil, nil
}

// deadLetterOf is the dead letter of a message row refused for reason.
func deadLetterOf(origin string, l Log, seq int64, msgid, reason, detail string) eventstore.DeadLetter {
	return eventstore.DeadLetter{Origin: origin, Log: string(l), Seq: seq, MsgID: msgid, Reason: reason, Detail: detail, Time: time.Time{}}
}
