package raft

import (
	"testing"
	"time"

	hraft "github.com/hashicorp/raft"
)

// TestTimeoutDefaultsMakeAValidRaftConfig checks that the timeouts an
// operator may set (and the lease derived from them) always make a
// configuration hashicorp/raft accepts.
func TestTimeoutDefaultsMakeAValidRaftConfig(t *testing.T) {
	tests := []struct {
		name               string
		heartbeat, elect   time.Duration
		lease              time.Duration
		wantHeartbeat      time.Duration
		wantLease          time.Duration
		wantValidateToFail bool
	}{
		{name: "defaults", wantHeartbeat: 500 * time.Millisecond, wantLease: 250 * time.Millisecond},
		{name: "short heartbeat shortens the lease", heartbeat: 200 * time.Millisecond, elect: 200 * time.Millisecond, wantHeartbeat: 200 * time.Millisecond, wantLease: 200 * time.Millisecond},
		{name: "long heartbeat keeps the default lease, lengthens the election", heartbeat: 2 * time.Second, wantHeartbeat: 2 * time.Second, wantLease: 250 * time.Millisecond},
		{name: "a shorter election timeout is raised to the heartbeat", heartbeat: time.Second, elect: 250 * time.Millisecond, wantHeartbeat: time.Second, wantLease: 250 * time.Millisecond},
		{name: "an explicit lease longer than the heartbeat is refused", heartbeat: 100 * time.Millisecond, lease: 300 * time.Millisecond, wantHeartbeat: 100 * time.Millisecond, wantLease: 300 * time.Millisecond, wantValidateToFail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Config{NodeID: "a", InMemory: true, HeartbeatTimeout: tt.heartbeat, ElectionTimeout: tt.elect, LeaderLeaseTimeout: tt.lease}.withDefaults()
			if err != nil {
				t.Fatalf("withDefaults: %v", err)
			}
			if cfg.HeartbeatTimeout != tt.wantHeartbeat || cfg.LeaderLeaseTimeout != tt.wantLease {
				t.Errorf("heartbeat %v lease %v, want %v and %v", cfg.HeartbeatTimeout, cfg.LeaderLeaseTimeout, tt.wantHeartbeat, tt.wantLease)
			}
			rc := cfg.raftConfig(nil)
			if err := hraft.ValidateConfig(rc); (err != nil) != tt.wantValidateToFail {
				t.Errorf("ValidateConfig = %v, want failure %v", err, tt.wantValidateToFail)
			}
		})
	}
}
