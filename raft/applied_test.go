package raft

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestAppliedIndexWait(t *testing.T) {
	tests := []struct {
		name    string
		initial uint64
		wait    uint64
		sets    []uint64 // applied after the waiter is parked
		closeIt bool
		wantErr error
	}{
		{name: "already reached", initial: 5, wait: 5},
		{name: "zero always reached", wait: 0},
		{name: "reached by a later set", initial: 1, wait: 3, sets: []uint64{2, 3}},
		{name: "passed by a later set", initial: 1, wait: 3, sets: []uint64{7}},
		{name: "restore moves it past", wait: 10, sets: []uint64{12}},
		{name: "close before reached", initial: 1, wait: 3, sets: []uint64{2}, closeIt: true, wantErr: ErrClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a appliedIndex
			a.set(tt.initial)
			result := make(chan error, 1)
			go func() { result <- a.wait(context.Background(), tt.wait) }()
			if tt.wait > tt.initial {
				waitForWaiters(t, &a, 1)
			}
			for _, index := range tt.sets {
				a.set(index)
			}
			if tt.closeIt {
				a.close()
			}
			select {
			case err := <-result:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("wait(%d) = %v, want %v", tt.wait, err, tt.wantErr)
				}
			case <-time.After(testTimeout):
				t.Fatalf("wait(%d) never returned", tt.wait)
			}
		})
	}
}

func TestAppliedIndexReleasesOnlySatisfiedWaiters(t *testing.T) {
	var a appliedIndex
	results := make(map[uint64]chan error)
	for _, index := range []uint64{4, 2, 6, 3} {
		ch := make(chan error, 1)
		results[index] = ch
		go func() { ch <- a.wait(context.Background(), index) }()
	}
	waitForWaiters(t, &a, 4)
	a.set(3)
	for _, index := range []uint64{2, 3} {
		if err := <-results[index]; err != nil {
			t.Fatalf("waiter %d: %v", index, err)
		}
	}
	if n := waiterCount(&a); n != 2 {
		t.Fatalf("%d waiters left after set(3), want 2", n)
	}
	a.set(6)
	for _, index := range []uint64{4, 6} {
		if err := <-results[index]; err != nil {
			t.Fatalf("waiter %d: %v", index, err)
		}
	}
}

func TestAppliedIndexWaitCancelRemovesWaiter(t *testing.T) {
	var a appliedIndex
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() { result <- a.wait(ctx, 9) }()
	waitForWaiters(t, &a, 1)
	cancel()
	if err := <-result; !errors.Is(err, context.Canceled) {
		t.Fatalf("wait after cancel = %v", err)
	}
	if n := waiterCount(&a); n != 0 {
		t.Fatalf("%d waiters left after cancel", n)
	}
}

func waiterCount(a *appliedIndex) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.waiters)
}

// waitForWaiters blocks until n goroutines are parked in a.wait.
func waitForWaiters(t *testing.T, a *appliedIndex, n int) {
	t.Helper()
	deadline := time.After(testTimeout)
	poll := time.NewTicker(time.Millisecond)
	defer poll.Stop()
	for waiterCount(a) < n {
		select {
		case <-poll.C:
		case <-deadline:
			t.Fatalf("only %d of %d waiters parked", waiterCount(a), n)
		}
	}
}
