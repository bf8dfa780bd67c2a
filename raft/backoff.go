package raft

import (
	"context"
	"time"
)

// backoff doubles a delay from low to high between retries.
type backoff struct {
	next, high time.Duration
}

func newBackoff(low, high time.Duration) *backoff { return &backoff{next: low, high: high} }

// wait sleeps for the current delay, or less when wake fires, ctx ends or
// deadline (if not zero) comes first; it returns ctx's error or
// context.DeadlineExceeded at the deadline.
func (b *backoff) wait(ctx context.Context, wake <-chan struct{}, deadline time.Time) error {
	delay := b.next
	b.next = min(2*b.next, b.high)
	if !deadline.IsZero() {
		left := time.Until(deadline)
		if left <= 0 {
			return context.DeadlineExceeded
		}
		delay = min(delay, left)
	}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
