package coord

import (
	"context"

	"github.com/palaver-chat/palaver/raft/fsm"
	fsmcoord "github.com/palaver-chat/palaver/raft/fsm/coord"
	"github.com/palaver-chat/palaver/raft/fsm/coord/act"
)

// sweepBatch bounds the actions one sweep expires.
const sweepBatch = 200

// Sweep expires the offers still standing (open or offered) whose act-deadline passed, beyond
// the clock tolerance, with the server's own expire step. The leader calls it; it returns how
// many it expired.
func (s *Service) Sweep(ctx context.Context) int {
	if s.cfg.ServerDID == "" || s.cfg.NewID == nil {
		return 0
	}
	now := s.cfg.Now().UnixMilli()
	var due []fsmcoord.ActAction
	s.read(func(st *fsm.State) {
		due = fsmcoord.Of(st).Actions(func(a *fsmcoord.ActAction) bool {
			k := act.Default.Kinds[a.Kind]
			standing := k != nil && (a.State == k.Opens.Open || a.State == k.Opens.Directed)
			return standing && a.Deadline > 0 && now > a.Deadline*1000+act.Default.DeadlineRule.ToleranceMS
		}, sweepBatch)
	})
	n := 0
	for _, a := range due {
		res, err := s.propose(ctx, fsmcoord.SystemActEvent{ActID: a.ID, Verb: "expire", EventID: s.cfg.NewID(), From: s.cfg.ServerDID})
		if err != nil {
			return n
		}
		if res.Code == fsm.OK {
			n++
		}
	}
	return n
}
