package node

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/gateway/coord"
	"github.com/palaver-chat/palaver/gateway/irc"
	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/node/stream"
	"github.com/palaver-chat/palaver/raft"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// mountCoord builds the coordination surface (ACT actions, tasks, manifests, spawned agents,
// capabilities, approvals, actor records, the audit timeline): its REST routes, the agent
// commands (PROVENANCE, AGENT, PRESENCE, HEARTBEAT), the check of coordination TAGMSGs before
// they are relayed, their filing once relayed (by the node whose client sent them), the signed
// confirm receipts, and the actor-class tag on JOIN. Its models are replicated state, so every
// node answers the same; receipts are signed with this node's server key, which never leaves it.
func mountCoord(cfg Config, log *slog.Logger, machine *fsm.Machine, prop *proposer, serverKey ed25519.PrivateKey,
	rs *rest.Server, ircSrv *irc.Server, streams *stream.Streams, rf *raft.Store) error {
	log = log.With("component", "coord")
	svc := coord.New(coord.Config{
		Options: cfg.Coord, State: machine, Proposer: prop, ServerDID: serverDID(cfg), ServerKey: serverKey,
		NewID: newULID, Logger: log,
	})
	if err := svc.Mount(rs); err != nil {
		return err
	}
	if err := svc.PlugIRC(ircSrv, streams.Stored, log); err != nil {
		return err
	}
	if every := cfg.Coord.ActSweepEvery; every > 0 {
		rf.OnLeadership(actSweep{svc, every, log}.run)
	}
	return nil
}

func newULID() string { return ulid.Make().String() }

// actSweep runs while this node leads: ACT offers past their deadline expire.
type actSweep struct {
	svc   *coord.Service
	every time.Duration
	log   *slog.Logger
}

func (s actSweep) run(ctx context.Context) {
	runEvery(ctx, s.every, func() {
		if expired := s.svc.Sweep(ctx); expired > 0 {
			s.log.Info("expired ACT offers past their deadline", "count", expired)
		}
	})
}
