package poll

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestWait(t *testing.T) {
	tests := []struct {
		name    string
		trueAt  int64 // the call from which cond holds; 0: never
		timeout time.Duration
		want    bool
	}{
		{"holds at once", 1, time.Second, true},
		{"holds after a few polls", 4, 10 * time.Second, true},
		{"never holds", 0, 30 * time.Millisecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int64
			cond := func() bool { n := calls.Add(1); return tt.trueAt != 0 && n >= tt.trueAt }
			start := time.Now()
			if got := wait(tt.timeout, cond); got != tt.want {
				t.Fatalf("wait = %v after %d calls, want %v", got, calls.Load(), tt.want)
			}
			if !tt.want && time.Since(start) < tt.timeout {
				t.Errorf("gave up after %s, before the %s timeout", time.Since(start), tt.timeout)
			}
			if tt.want && calls.Load() != tt.trueAt {
				t.Errorf("cond asked %d times, want %d", calls.Load(), tt.trueAt)
			}
		})
	}
}
