package irc

import (
	"testing"
	"time"
)

// TestKeepaliveSweep walks one connection through the keepalive's states with an explicit clock.
func TestKeepaliveSweep(t *testing.T) {
	const after, timeout = int64(30 * time.Second), int64(60 * time.Second)
	sec := func(n int) int64 { return int64(n) * int64(time.Second) }
	tests := []struct {
		name       string
		lastInput  int64
		pingedAt   int64
		now        int64
		wantPing   bool
		wantExpire bool
		wantPinged int64
	}{
		{"recent input", sec(10), 0, sec(20), false, false, 0},
		{"silent for PingAfter", sec(10), 0, sec(40), true, false, sec(40)},
		{"pinged, waiting", sec(10), sec(40), sec(90), false, false, sec(40)},
		{"pinged, no answer for PingTimeout", sec(10), sec(40), sec(100), false, true, sec(40)},
		{"pinged and answered", sec(45), sec(40), sec(50), false, false, 0},
		{"answered long ago, silent again", sec(45), sec(40), sec(80), true, false, sec(80)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newKeepalive()
			c := &client{}
			k.conns[c] = struct{}{}
			c.alive.lastInput.Store(tt.lastInput)
			c.alive.pingedAt = tt.pingedAt
			ping, expire := k.sweep(tt.now, after, timeout, nil, nil)
			if (len(ping) == 1) != tt.wantPing || (len(expire) == 1) != tt.wantExpire {
				t.Fatalf("ping %d, expire %d; want ping %v, expire %v", len(ping), len(expire), tt.wantPing, tt.wantExpire)
			}
			if _, tracked := k.conns[c]; tracked == tt.wantExpire {
				t.Fatalf("still tracked = %v after expiry %v", tracked, tt.wantExpire)
			}
			if c.alive.pingedAt != tt.wantPinged {
				t.Fatalf("pingedAt = %d, want %d", c.alive.pingedAt, tt.wantPinged)
			}
		})
	}
}
