package poll

import (
	"testing"
	"time"
)

// Timeout is how long Until waits: long enough for a loaded machine running the race detector.
const Timeout = 20 * time.Second

// interval is how often the condition is polled.
const interval = 5 * time.Millisecond

// Until polls cond until it holds, and fails tb (naming what it waited for) when Timeout passes
// first.
func Until(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	Within(tb, Timeout, what, cond)
}

// Within is Until with its own timeout.
func Within(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !wait(timeout, cond) {
		tb.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// UntilShowing is Until that, when it times out, also reports state(): what the test saw last,
// so that a failure on a loaded machine says more than that it waited.
func UntilShowing(tb testing.TB, what string, cond func() bool, state func() string) {
	tb.Helper()
	if !wait(Timeout, cond) {
		tb.Fatalf("timed out after %s waiting for %s; last seen: %s", Timeout, what, state())
	}
}

// wait polls cond until it holds (true) or timeout passes (false). cond is always asked once
// more after the deadline, so a condition that became true meanwhile is not reported late.
func wait(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return cond()
		}
		<-tick.C
	}
	return true
}
