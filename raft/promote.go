package raft

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// The promotion rule. Every member enters the raft configuration as a
// non-voter; the leader makes it a voter only once it is healthy (it answers
// the status call of the cluster RPC, follows this leader, has applied the
// log up to where this leader first saw it as a member and is within
// promotionMaxLag entries of the leader's applied index) and has stayed so for Config.StabilizationTime. A
// member that announces itself in gossip but never answers stays a
// non-voter, and a non-voter does not count towards a quorum: a join can no
// longer leave a cluster without one.
//
// hashicorp/raft-autopilot implements the same rule but owns the whole
// membership loop (its own server list, failure tolerance, dead-server
// removal and promotion through a delegate): adopting it would have meant
// handing it reconcile's gossip-driven adds, moves, dead-voter swaps and
// DeadNodeGrace removals through adapters, for a rule that takes the
// hundred lines below.

// opStatus asks a member for its progress. The request body is a
// statusRequest naming the member asked; the answer's Index is its applied
// index and LeaderID the leader it follows.
const opStatus = "status"

const (
	// promotionMaxLag is how many entries a member may trail the leader's
	// applied index and still count as caught up: a follower under load
	// trails by what arrived since the last append, far less than this.
	promotionMaxLag = 128
	// maxStatusProbe bounds one status call; a member that does not answer
	// within it is unhealthy for this pass.
	maxStatusProbe = time.Second
)

// statusRequest is the body of an opStatus call.
type statusRequest struct {
	// Node is the member the caller means to reach: a node answers only to
	// its own id, so an address taken over by another node is not mistaken
	// for the member.
	Node string `json:"node"`
}

// handleStatus answers opStatus.
func (s *Store) handleStatus(body []byte) *rpcResponse {
	var req statusRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return &rpcResponse{Code: codeBadRequest, Error: fmt.Sprintf("status request: %v", err)}
	}
	if req.Node != s.cfg.NodeID {
		return &rpcResponse{Code: codeBadRequest,
			Error: fmt.Sprintf("status of node %q asked of node %q", req.Node, s.cfg.NodeID)}
	}
	_, leaderID := s.raft.LeaderWithID()
	return &rpcResponse{Index: s.fsm.applied.get(), LeaderID: string(leaderID)}
}

// memberStatus is one probe's result.
type memberStatus struct {
	applied uint64
	leader  string
	err     error
}

// probeStatus calls opStatus on each member (id → cluster RPC address)
// concurrently, each bounded by maxStatusProbe.
func (s *Store) probeStatus(ctx context.Context, members map[string]string) map[string]memberStatus {
	out := make(map[string]memberStatus, len(members))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for id, addr := range members {
		wg.Go(func() {
			st := s.callStatus(ctx, id, addr)
			mu.Lock()
			out[id] = st
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

func (s *Store) callStatus(ctx context.Context, id, addr string) memberStatus {
	if addr == "" {
		return memberStatus{err: errors.New("no cluster RPC address in its gossip")}
	}
	ctx, cancel := context.WithTimeout(ctx, maxStatusProbe)
	defer cancel()
	body, err := json.Marshal(statusRequest{Node: id})
	if err != nil {
		return memberStatus{err: fmt.Errorf("encode status request: %w", err)}
	}
	req := &rpcRequest{Op: opStatus, Cluster: s.ClusterID(), From: s.cfg.NodeID, Body: body}
	resp, err := s.rpcClient.call(ctx, addr, req)
	if err != nil {
		return memberStatus{err: err}
	}
	if resp.Code != "" {
		return memberStatus{err: fmt.Errorf("%s (%s)", resp.Error, resp.Code)}
	}
	return memberStatus{applied: resp.Index, leader: resp.LeaderID}
}

// promotionTracker remembers, for one leader term, since when each
// non-voter has been healthy.
type promotionTracker struct {
	healthySince map[string]time.Time
	// required is, per member, the index it must have applied before it
	// first counts as healthy: the leader's applied index when this term
	// first probed it, or the configuration that added it if later. A
	// member that applied it received this cluster's log through raft.
	required map[string]uint64
	// reported is the last reason logged per member, so that a member
	// stuck unhealthy is logged when its reason changes, not every pass.
	reported map[string]string
}

func newPromotionTracker() *promotionTracker {
	return &promotionTracker{healthySince: map[string]time.Time{}, required: map[string]uint64{}, reported: map[string]string{}}
}

// progress is what the leader compares a member's status with.
type progress struct {
	self          string
	leaderApplied uint64
	// required: see promotionTracker.required. Asked only of a member not
	// yet healthy, so that later entries do not restart its stabilization.
	required uint64
}

// unhealthy returns why a member with status st cannot be promoted yet, or
// "" when it is healthy; wasHealthy says it was at the previous probe.
func (p progress) unhealthy(st memberStatus, wasHealthy bool) string {
	switch {
	case st.err != nil:
		return "does not answer the cluster RPC: " + st.err.Error()
	case st.leader != p.self:
		return fmt.Sprintf("follows leader %q, not this node", st.leader)
	case !wasHealthy && st.applied < p.required:
		return fmt.Sprintf("has applied up to %d, not yet %d", st.applied, p.required)
	case p.leaderApplied > st.applied && p.leaderApplied-st.applied > promotionMaxLag:
		return fmt.Sprintf("trails the leader by %d entries", p.leaderApplied-st.applied)
	}
	return ""
}

// update records the probes of this pass and returns the members healthy
// for at least stabilization at now. added holds the configuration index
// of members added in this pass. Members not probed are forgotten.
func (t *promotionTracker) update(s *Store, statuses map[string]memberStatus, self string, leaderApplied uint64,
	added map[string]uint64, stabilization time.Duration, now time.Time) map[string]bool {
	for id := range t.required {
		if _, ok := statuses[id]; !ok {
			delete(t.required, id)
			delete(t.healthySince, id)
			delete(t.reported, id)
		}
	}
	stable := map[string]bool{}
	for id, st := range statuses {
		required, ok := t.required[id]
		if !ok {
			required = max(leaderApplied, added[id])
			t.required[id] = required
		}
		_, wasHealthy := t.healthySince[id]
		reason := progress{self: self, leaderApplied: leaderApplied, required: required}.unhealthy(st, wasHealthy)
		if reason != "" {
			delete(t.healthySince, id)
			if t.reported[id] != reason {
				t.reported[id] = reason
				s.logger.Info("raft non-voter not promotable yet", "member", id, "reason", reason)
			}
			continue
		}
		delete(t.reported, id)
		since, ok := t.healthySince[id]
		if !ok {
			since = now
			t.healthySince[id] = now
		}
		if now.Sub(since) >= stabilization {
			stable[id] = true
		}
	}
	return stable
}

// waitingForStability reports whether some member is healthy but not yet
// stable at now, so the reconcile loop must look again soon.
func (t *promotionTracker) waitingForStability(now time.Time, stabilization time.Duration) bool {
	for _, since := range t.healthySince {
		if now.Sub(since) < stabilization {
			return true
		}
	}
	return false
}
