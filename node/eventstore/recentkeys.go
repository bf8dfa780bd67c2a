package eventstore

import "math"

// recentKeys is the greatest okey stored in each recent millisecond, so that a root stamped a few
// milliseconds before the newest one stored still joins the run of new roots (roots.go) instead
// of going in alone, with a sub-select for its key. Such roots are common: a node stores another
// node's messages in that node's order, and the messages of concurrent connections are stamped
// before they queue for the writer, so their milliseconds jitter by a few behind the newest.
//
// It knows every millisecond from floor on: a millisecond >= floor missing from top holds no
// root. Open starts it at the newest stored millisecond; every root the writer stores in a
// millisecond >= floor is noted in its transaction (writeTxn.keys) and merged when the
// transaction commits (a rolled back one's keys are dropped with it). The floor only rises, when
// top is trimmed to the last recentSpan milliseconds; older roots take the single-row insert.
// Only the writer goroutine touches it.
type recentKeys struct {
	floor, newest int64
	top           map[int64]int64
}

const (
	recentSpan = 2000 // milliseconds kept behind the newest
	recentMax  = 4096 // entries before a trim
)

func newRecentKeys(maxOkey int64) recentKeys {
	r := recentKeys{floor: maxOkey >> tieBits, newest: maxOkey >> tieBits, top: map[int64]int64{}}
	if maxOkey != math.MinInt64 {
		r.top[r.floor] = maxOkey
	}
	return r
}

// merge adopts a committed transaction's keys.
func (r *recentKeys) merge(keys map[int64]int64) {
	for ms, k := range keys {
		if cur, ok := r.top[ms]; !ok || k > cur {
			r.top[ms] = k
		}
		r.newest = max(r.newest, ms)
	}
	if len(r.top) > recentMax {
		r.floor = max(r.floor, r.newest-recentSpan)
		for ms := range r.top {
			if ms < r.floor {
				delete(r.top, ms)
			}
		}
	}
}

// topKey is the greatest okey stored in millisecond ms (ms >= floor), this transaction's included.
func (tx *writeTxn) topKey(ms int64) (int64, bool) {
	if k, ok := tx.keys[ms]; ok {
		return k, true
	}
	k, ok := tx.recent.top[ms]
	return k, ok
}

// noteKey records a root stored (or queued) under okey.
func (tx *writeTxn) noteKey(okey int64) {
	tx.maxOkey = max(tx.maxOkey, okey)
	ms := okey >> tieBits
	if ms < tx.recent.floor {
		return
	}
	if cur, ok := tx.topKey(ms); !ok || okey > cur {
		tx.keys[ms] = okey
	}
}
