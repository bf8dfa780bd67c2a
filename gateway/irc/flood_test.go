package irc

import (
	"testing"
	"time"
)

// TestFloodOwe: a JOIN list longer than the burst leaves the bucket in debt by the rest, so the
// channels of a long list cost as much as joining them one by one.
func TestFloodOwe(t *testing.T) {
	var f floodState
	f.init(true)
	now := time.Unix(1_800_000_000, 0)
	if !allowN(f.joins, now, 50) {
		t.Fatal("a full bucket refused a long list")
	}
	f.owe(f.joins, now, 50-joinBurst)
	if got := f.joins.TokensAt(now); got != -30 {
		t.Fatalf("tokens after a 50-channel list: %v, want -30", got)
	}
	// 2 per second: 15.5 s until one channel may be joined again.
	if allowN(f.joins, now.Add(15*time.Second), 1) || !allowN(f.joins, now.Add(15500*time.Millisecond), 1) {
		t.Fatal("the debt is not paid back at 2 tokens a second")
	}
	var off floodState
	off.init(false)
	off.owe(off.joins, now, 100) // flood limits off: nothing to owe
	if !allowN(off.joins, now, 1000) {
		t.Fatal("flood limits off refused a JOIN")
	}
}
