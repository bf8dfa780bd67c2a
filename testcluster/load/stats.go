package load

import (
	"math"
	"slices"
	"time"
)

// Summary is the median and the spread (minimum and maximum) of a set of
// values, the form every repeated measurement is reported in.
type Summary struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// Summarize returns the median, minimum and maximum of values, ignoring
// NaNs. It returns a zero Summary (N == 0) when no value is left.
func Summarize(values []float64) Summary {
	sorted := make([]float64, 0, len(values))
	for _, v := range values {
		if !math.IsNaN(v) {
			sorted = append(sorted, v)
		}
	}
	if len(sorted) == 0 {
		return Summary{}
	}
	slices.Sort(sorted)
	return Summary{
		Median: Median(sorted),
		Min:    sorted[0],
		Max:    sorted[len(sorted)-1],
		N:      len(sorted),
	}
}

// Median returns the middle of the sorted values, the mean of the two
// middle ones for an even count, NaN for none.
func Median(sorted []float64) float64 {
	n := len(sorted)
	switch {
	case n == 0:
		return math.NaN()
	case n%2 == 1:
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// Percentile returns the nearest-rank p-th percentile (0 < p ≤ 100) of the
// sorted values: the smallest value such that at least p% of the values
// are less than or equal to it. p ≤ 0 gives the minimum; an empty slice
// gives 0. Nearest rank never invents a value that was not measured, so a
// reported p99 latency is one some login really had.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if p <= 0 {
		return sorted[0]
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

// LatencySummary describes one run's latency distribution.
type LatencySummary struct {
	Count int           `json:"count"`
	P50   time.Duration `json:"p50_ns"`
	P90   time.Duration `json:"p90_ns"`
	P99   time.Duration `json:"p99_ns"`
	Max   time.Duration `json:"max_ns"`
}

// SummarizeLatencies sorts samples in place and returns their percentiles.
func SummarizeLatencies(samples []time.Duration) LatencySummary {
	slices.Sort(samples)
	s := LatencySummary{
		Count: len(samples),
		P50:   Percentile(samples, 50),
		P90:   Percentile(samples, 90),
		P99:   Percentile(samples, 99),
	}
	if len(samples) > 0 {
		s.Max = samples[len(samples)-1]
	}
	return s
}
