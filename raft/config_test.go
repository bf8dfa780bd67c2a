package raft

import (
	"strings"
	"testing"
	"time"

	hraft "github.com/hashicorp/raft"
)

// TestTimingProfiles checks that every profile makes a configuration hashicorp/raft accepts, and
// that production is what `palaver serve` has shipped: heartbeat and election 250 ms, commit 2 ms.
func TestTimingProfiles(t *testing.T) {
	for _, name := range ProfileNames() {
		timing, err := Profile(name)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := Config{NodeID: "a", InMemory: true, Timing: timing}.withDefaults()
		if err != nil {
			t.Fatalf("profile %s: %v", name, err)
		}
		if err := hraft.ValidateConfig(cfg.raftConfig(nil)); err != nil {
			t.Errorf("profile %s: raft refuses it: %v", name, err)
		}
	}
	want := Timing{HeartbeatTimeout: 250 * time.Millisecond, ElectionTimeout: 250 * time.Millisecond, LeaderLeaseTimeout: 250 * time.Millisecond, CommitTimeout: 2 * time.Millisecond}
	if got := MustProfile(ProfileProduction); got != want {
		t.Errorf("production profile %+v, want %+v", got, want)
	}
	if _, err := Profile("fast"); err == nil || !strings.Contains(err.Error(), "production") {
		t.Errorf("unknown profile: err %v, want one naming the profiles", err)
	}
}

// TestTimingValidate: a timing is refused with every problem named, and Adjusted makes one whose
// heartbeat alone was changed acceptable again.
func TestTimingValidate(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name     string
		timing   Timing
		problems []string // substrings of the error, one per problem; none: valid
		adjusted Timing   // what Adjusted makes of it, when it differs
	}{
		{name: "production", timing: MustProfile(ProfileProduction)},
		{name: "zero", timing: Timing{}, problems: []string{"heartbeat timeout 0s", "election timeout 0s", "lease timeout 0s", "commit timeout 0s"}},
		{name: "negative commit", timing: Timing{100 * ms, 100 * ms, 50 * ms, -ms}, problems: []string{"commit timeout -1ms"}},
		{name: "heartbeat shortened", timing: Timing{100 * ms, 250 * ms, 250 * ms, 2 * ms},
			problems: []string{"lease timeout 250ms: must be at most the heartbeat timeout 100ms"}, adjusted: Timing{100 * ms, 250 * ms, 100 * ms, 2 * ms}},
		{name: "heartbeat lengthened", timing: Timing{time.Second, 250 * ms, 250 * ms, 2 * ms},
			problems: []string{"election timeout 250ms: must be at least the heartbeat timeout 1s"}, adjusted: Timing{time.Second, time.Second, 250 * ms, 2 * ms}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.timing.Validate()
			if (err != nil) != (len(tt.problems) > 0) {
				t.Fatalf("Validate = %v, want problems %q", err, tt.problems)
			}
			for _, p := range tt.problems {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("Validate = %v, want it to name %q", err, p)
				}
			}
			if tt.adjusted != (Timing{}) {
				got := tt.timing.Adjusted()
				if got != tt.adjusted {
					t.Errorf("Adjusted = %+v, want %+v", got, tt.adjusted)
				}
				if err := got.Validate(); err != nil {
					t.Errorf("adjusted timing refused: %v", err)
				}
			}
		})
	}
}
