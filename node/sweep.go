package node

import (
	"context"
	"log/slog"
	"time"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// channelSweep runs while this node leads: every ChannelSweepEvery it proposes ExpireChannels,
// which deletes the channels that have been empty for longer than the configured expiries (the
// time is the one this proposal is stamped with, so every replica deletes the same ones).
type channelSweep struct {
	cfg  Config
	prop *proposer
	log  *slog.Logger
}

func (s channelSweep) run(ctx context.Context) {
	expiry := func(d time.Duration) int64 {
		if d < 0 {
			return 0
		}
		return d.Milliseconds()
	}
	cmd := fsm.ExpireChannels{UnownedAfter: expiry(s.cfg.UnownedChannelExpiry), OwnedAfter: expiry(s.cfg.FoundedChannelExpiry)}
	if cmd.UnownedAfter == 0 && cmd.OwnedAfter == 0 {
		return
	}
	prop := s.prop
	runEvery(ctx, s.cfg.ChannelSweepEvery, func() {
		res, err := prop.Propose(ctx, cmd)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn("sweeping empty channels", "err", err)
		case err == nil && res.Count > 0:
			s.log.Info("expired empty channels", "count", res.Count)
		}
	})
}

// runEvery calls f every interval until ctx ends.
func runEvery(ctx context.Context, interval time.Duration, f func()) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			f()
		}
	}
}
