package raft

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	hraft "github.com/hashicorp/raft"
)

// configChangeTimeout bounds the wait for raft to accept one configuration
// change; the leader-term context bounds the wait for its commit.
const configChangeTimeout = 5 * time.Second

// reconcileLoop is the leader-only job that keeps the raft configuration in
// line with gossip: it runs a pass at every gossip or configuration change
// and on a timer (grace periods end without an event).
func (s *Store) reconcileLoop(ctx context.Context) {
	r := &reconciler{s: s, unknownSince: map[string]time.Time{}, promotion: newPromotionTracker()}
	ticker := time.NewTicker(s.cfg.reconcileInterval())
	defer ticker.Stop()
	// A member healthy but not yet stable is looked at again once its
	// stabilization time may be over, without waiting for the ticker.
	var soon *time.Timer
	defer func() {
		if soon != nil {
			soon.Stop()
		}
	}()
	for {
		changed := s.membership.changed()
		if err := r.pass(ctx); err != nil && ctx.Err() == nil {
			s.logger.Warn("membership reconcile pass failed; retrying", "err", err)
		}
		s.hooks.reconcilePasses.Add(1)
		var again <-chan time.Time
		if r.promotion.waitingForStability(time.Now(), s.cfg.StabilizationTime) || r.wantVoters {
			if soon == nil {
				soon = time.NewTimer(s.cfg.promotionRecheck())
			} else {
				soon.Reset(s.cfg.promotionRecheck())
			}
			again = soon.C
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-changed:
		case <-again:
		}
	}
}

// reconciler is one leader term's reconcile state.
type reconciler struct {
	s *Store
	// unknownSince is when this leader first found a configured server
	// that gossip has never reported: a node that died before this leader
	// started gossiping. Its grace period starts then.
	unknownSince map[string]time.Time
	warnedTwo    bool
	pinsWaiting  bool // a server does not keep pins yet (pinPass), said once
	promotion    *promotionTracker
	// wantVoters: at the last pass a voter was missing or dead while
	// non-voters were being probed, so the loop probes again soon.
	wantVoters bool
}

// pass makes one round of changes:
//  1. add live members of this cluster missing from the configuration, as
//     non-voters, and update the address of members that moved;
//     then pin the servers' keys and unpin those of nodes that left (pins.go);
//  2. probe the live non-voters (promote.go); promote those healthy for
//     StabilizationTime while voters are fewer than MaxVoters, and swap
//     each voter gossip reports dead for such a non-voter (promote, then
//     demote), so the cluster keeps MaxVoters live voters;
//  3. remove servers dead (or unknown) for longer than DeadNodeGrace, then
//     call OnNodeRemoved; never this node.
//
// Each change waits for its commit, so the next one sees it.
func (r *reconciler) pass(ctx context.Context) error {
	s := r.s
	configuration, ok := s.configuration()
	if !ok {
		return fmt.Errorf("raft: reconcile: read configuration: %w", ErrClosed)
	}
	servers := map[string]hraft.Server{}
	voters := 0
	for _, server := range configuration.Servers {
		servers[string(server.ID)] = server
		if server.Suffrage == hraft.Voter {
			voters++
		}
	}
	records := s.gossip.records()
	self := s.cfg.NodeID
	clusterID := s.ClusterID()
	alive := func(id string) bool {
		rec, ok := records[id]
		return id == self || ok && rec.alive
	}

	// 1. Add and move.
	added := map[string]uint64{}
	for _, id := range slices.Sorted(maps.Keys(records)) {
		rec := records[id]
		if id == self || !rec.alive || rec.meta.ClusterID != clusterID || rec.meta.RaftAddr == "" {
			continue
		}
		addr := hraft.ServerAddress(rec.meta.RaftAddr)
		server, inConfiguration := servers[id]
		var suffrage hraft.ServerSuffrage
		switch {
		case !inConfiguration:
			// Never straight in as a voter: see promote.go.
			suffrage = hraft.Nonvoter
		case server.Address != addr:
			suffrage = server.Suffrage
			s.logger.Info("raft member moved", "member", id, "from", server.Address, "to", addr)
		default:
			continue
		}
		index, err := r.setServer(ctx, id, addr, suffrage)
		if err != nil {
			return err
		}
		added[id] = index
		servers[id] = hraft.Server{ID: hraft.ServerID(id), Address: addr, Suffrage: suffrage}
	}

	// Pin the servers' keys, unpin those of nodes that left.
	r.pinPass(ctx, servers, records, clusterID)

	// 2. Promote healthy non-voters, and replace dead voters.
	probe := map[string]string{}
	for id, server := range servers {
		if server.Suffrage == hraft.Nonvoter && alive(id) && records[id].meta.ClusterID == clusterID {
			probe[id] = records[id].meta.RPCAddr
		}
	}
	statuses := s.probeStatus(ctx, probe)
	stable := r.promotion.update(s, statuses, self, s.fsm.applied.get(), added, s.cfg.StabilizationTime, time.Now())
	var candidates, deadVoters []string
	for _, id := range slices.Sorted(maps.Keys(servers)) {
		server := servers[id]
		switch {
		case server.Suffrage == hraft.Nonvoter && stable[id]:
			candidates = append(candidates, id)
		case server.Suffrage == hraft.Voter && id != self && records[id].name != "" && !records[id].alive:
			// Known dead only: a voter gossip has not reported yet may be
			// alive and still joining.
			deadVoters = append(deadVoters, id)
		}
	}
	r.wantVoters = len(probe) > 0 && (voters < s.cfg.MaxVoters || len(deadVoters) > 0)
	promote := func() error {
		id := candidates[0]
		candidates = candidates[1:]
		if _, err := r.setServer(ctx, id, servers[id].Address, hraft.Voter); err != nil {
			return err
		}
		delete(r.promotion.healthySince, id)
		voters++
		return nil
	}
	for voters < s.cfg.MaxVoters && len(candidates) > 0 {
		if err := promote(); err != nil {
			return err
		}
	}
	for _, id := range deadVoters {
		if len(candidates) == 0 {
			break
		}
		if err := promote(); err != nil {
			return err
		}
		if err := r.demote(ctx, id); err != nil {
			return err
		}
		voters--
	}

	// 3. Remove the long dead.
	now := time.Now()
	for _, id := range slices.Sorted(maps.Keys(servers)) {
		if id == self || alive(id) {
			delete(r.unknownSince, id)
			continue
		}
		rec, seen := records[id]
		since := rec.since
		if !seen {
			first, ok := r.unknownSince[id]
			if !ok {
				first = now
				r.unknownSince[id] = now
			}
			since = first
		}
		if now.Sub(since) <= s.cfg.DeadNodeGrace {
			continue
		}
		if err := r.remove(ctx, id, servers[id].Suffrage, now.Sub(since)); err != nil {
			return err
		}
		delete(r.unknownSince, id)
		if servers[id].Suffrage == hraft.Voter {
			voters--
		}
	}

	r.warnTwoVoters(voters)
	return nil
}

// setServer adds a server, moves it or promotes it (AddVoter on a non-voter
// promotes it; AddNonvoter on a voter leaves it a voter), and returns the
// index of the new configuration.
func (r *reconciler) setServer(ctx context.Context, id string, addr hraft.ServerAddress, suffrage hraft.ServerSuffrage) (uint64, error) {
	s := r.s
	var future hraft.IndexFuture
	if suffrage == hraft.Voter {
		future = s.raft.AddVoter(hraft.ServerID(id), addr, 0, configChangeTimeout)
	} else {
		future = s.raft.AddNonvoter(hraft.ServerID(id), addr, 0, configChangeTimeout)
	}
	if err := waitFuture(ctx, future); err != nil {
		return 0, fmt.Errorf("raft: reconcile: set %s as %s at %s: %w", id, suffrage, addr, err)
	}
	s.logger.Info("raft configuration: server set", "member", id, "suffrage", suffrage.String(), "addr", addr)
	return future.Index(), nil
}

func (r *reconciler) demote(ctx context.Context, id string) error {
	s := r.s
	if err := waitFuture(ctx, s.raft.DemoteVoter(hraft.ServerID(id), 0, configChangeTimeout)); err != nil {
		return fmt.Errorf("raft: reconcile: demote dead voter %s: %w", id, err)
	}
	s.logger.Warn("raft configuration: dead voter demoted, a live non-voter took its place", "member", id)
	return nil
}

func (r *reconciler) remove(ctx context.Context, id string, suffrage hraft.ServerSuffrage, deadFor time.Duration) error {
	s := r.s
	if err := waitFuture(ctx, s.raft.RemoveServer(hraft.ServerID(id), 0, configChangeTimeout)); err != nil {
		return fmt.Errorf("raft: reconcile: remove dead server %s: %w", id, err)
	}
	s.logger.Warn("raft configuration: dead server removed", "member", id,
		"suffrage", suffrage.String(), "dead_for", deadFor.Round(time.Millisecond))
	if s.cfg.OnNodeRemoved != nil {
		s.cfg.OnNodeRemoved(id)
	}
	return nil
}

// warnTwoVoters logs once each time the cluster settles on two voters: a
// majority of two is both, so losing either stops all writes.
func (r *reconciler) warnTwoVoters(voters int) {
	if voters != 2 {
		r.warnedTwo = false
		return
	}
	if !r.warnedTwo {
		r.warnedTwo = true
		r.s.logger.Warn("the cluster has exactly two raft voters: losing either one stops all writes; run three or five nodes")
	}
}
