package load

import (
	"math"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		name   string
		values []float64
		want   Summary
	}{
		{"empty", nil, Summary{}},
		{"one", []float64{7}, Summary{Median: 7, Min: 7, Max: 7, N: 1}},
		{"odd unsorted", []float64{9, 1, 5}, Summary{Median: 5, Min: 1, Max: 9, N: 3}},
		{"even takes the mean of the middle pair", []float64{4, 1, 3, 10}, Summary{Median: 3.5, Min: 1, Max: 10, N: 4}},
		{"NaN ignored", []float64{math.NaN(), 2, 4}, Summary{Median: 3, Min: 2, Max: 4, N: 2}},
		{"only NaN", []float64{math.NaN()}, Summary{}},
		{"negative", []float64{-3, -1, -2}, Summary{Median: -2, Min: -3, Max: -1, N: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Summarize(tt.values); got != tt.want {
				t.Errorf("Summarize(%v) = %+v, want %+v", tt.values, got, tt.want)
			}
		})
	}
}

func TestSummarizeLeavesInputAlone(t *testing.T) {
	in := []float64{3, 1, 2}
	Summarize(in)
	if in[0] != 3 || in[1] != 1 || in[2] != 2 {
		t.Errorf("Summarize reordered its input: %v", in)
	}
}

func TestMedianEmptyIsNaN(t *testing.T) {
	if !math.IsNaN(Median(nil)) {
		t.Error("Median(nil) is not NaN")
	}
}

func TestPercentile(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond // 1..100 ms
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"single", []time.Duration{5}, 99, 5},
		{"p0 is the minimum", hundred, 0, time.Millisecond},
		{"p50 of 1..100", hundred, 50, 50 * time.Millisecond},
		{"p99 of 1..100", hundred, 99, 99 * time.Millisecond},
		{"p100 is the maximum", hundred, 100, 100 * time.Millisecond},
		{"above 100 clamps", hundred, 150, 100 * time.Millisecond},
		{"p50 of four rounds up to rank 2", []time.Duration{1, 2, 3, 4}, 50, 2},
		{"p51 of four is rank 3", []time.Duration{1, 2, 3, 4}, 51, 3},
		{"p99 of ten is the maximum", []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99, 10},
		{"p90 of ten", []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 90, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("Percentile(p%v) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
}

func TestSummarizeLatencies(t *testing.T) {
	samples := []time.Duration{30, 10, 20, 50, 40}
	got := SummarizeLatencies(samples)
	want := LatencySummary{Count: 5, P50: 30, P90: 50, P99: 50, Max: 50}
	if got != want {
		t.Errorf("SummarizeLatencies = %+v, want %+v", got, want)
	}
	if empty := SummarizeLatencies(nil); empty != (LatencySummary{}) {
		t.Errorf("SummarizeLatencies(nil) = %+v, want zero", empty)
	}
}
