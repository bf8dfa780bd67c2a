package eventstore

import (
	"fmt"
	"hash/fnv"
	"math"
	"time"
)

// Order keys. Every view orders roots by (time_ms, seq). The store materializes that order in one
// integer per root, okey = time_ms<<tieBits | n, where n counts the roots already stored in the
// same millisecond (0, 1, 2, ...). Since seq also grows in arrival order, okey order is exactly
// (time_ms, seq) order, and one integer is what makes both the views and search cheap:
//
//   - a view is one range scan over the partial index (venue, okey) without row-value comparisons;
//   - the search index uses -okey as its rowid, so FTS5 yields matches newest first in ascending
//     rowid order and stops after limit hits, instead of collecting and sorting every match.
const (
	tieBits = 20 // roots per millisecond: 1,048,576
	// time_ms must lie strictly between minTimeMs and maxTimeMs for okey to fit an int64 (about
	// years 1691 to 2248) without reaching the sentinels math.MinInt64 and math.MaxInt64.
	minTimeMs = math.MinInt64 >> tieBits
	maxTimeMs = math.MaxInt64 >> tieBits
)

// firstKeyOf is the smallest okey of a millisecond; every root of that millisecond is in
// [firstKeyOf(ms), firstKeyOf(ms+1)).
func firstKeyOf(ms int64) int64 { return ms << tieBits }

func validTime(t time.Time) error {
	if ms := t.UnixMilli(); ms <= minTimeMs || ms >= maxTimeMs {
		return fmt.Errorf("time %v out of range", t)
	}
	return nil
}

// Exclusive key bounds for time references.
func keysBeforeMs(ms int64) int64 { // okey < this ⟺ time_ms < ms
	return firstKeyOf(clampMs(ms))
}

func keysAfterMs(ms int64) int64 { // okey > this ⟺ time_ms > ms
	if ms >= maxTimeMs {
		return math.MaxInt64
	}
	return firstKeyOf(clampMs(ms)+1) - 1
}

func clampMs(ms int64) int64 { return min(max(ms, minTimeMs), maxTimeMs) }

// venueToken is the search index's token for a venue: a hash, so that every venue is one
// alphanumeric token whatever characters its name holds. Search also compares the venue itself,
// so a hash collision cannot leak messages across venues.
func venueToken(venue string) string {
	h := fnv.New64a()
	h.Write([]byte(venue))
	return fmt.Sprintf("v%016x", h.Sum64())
}
