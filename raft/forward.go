package raft

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	hraft "github.com/hashicorp/raft"
)

const (
	retryLow  = 10 * time.Millisecond
	retryHigh = 500 * time.Millisecond
	// maxReproposals bounds how often a forwarded entry is proposed again
	// because its local response was no longer kept (see propose).
	maxReproposals = 3
)

// testHooks lets this package's tests inject faults and observe progress.
type testHooks struct {
	// forwardAccepted, when set, runs on the leader after raft accepted a
	// forwarded entry and before the commit; returning true drops the
	// answer (the connection is closed after the entry is applied).
	forwardAccepted atomic.Pointer[func(data []byte) (dropReply bool)]
	// reconcilePasses counts reconcile passes on this node.
	reconcilePasses atomic.Int64
}

// propose runs the attempts of Propose until one succeeds, an error is
// final, or ctx ends.
func (s *Store) propose(ctx context.Context, data []byte) (any, uint64, error) {
	if err := s.admit(data); err != nil {
		return nil, 0, fmt.Errorf("raft: propose: %w", err)
	}
	retry := newBackoff(retryLow, retryHigh)
	reproposals := 0
	for {
		if s.isClosed() {
			return nil, 0, fmt.Errorf("raft: propose: %w", ErrClosed)
		}
		changed := s.leader.changed()
		var err error
		if s.raft.State() == hraft.Leader {
			var resp any
			var index uint64
			if resp, index, err = s.proposeLocal(ctx, data); err == nil {
				return resp, index, nil
			}
		} else if s.rpcClient == nil {
			return nil, 0, s.notLeaderError("propose")
		} else {
			var index uint64
			if index, err = s.forwardPropose(ctx, data); err == nil {
				if err := s.WaitApplied(ctx, index); err != nil {
					return nil, 0, fmt.Errorf("raft: propose: forwarded entry committed at %d: %w", index, err)
				}
				if resp, ok := s.fsm.responses.get(index); ok {
					return resp, index, nil
				}
				// This node installed a snapshot covering the entry, or
				// applied thousands more since: its response is gone. The
				// state machine answers a repeated request id with the
				// recorded result, so proposing again recovers it.
				if reproposals++; reproposals > maxReproposals {
					return nil, 0, fmt.Errorf("raft: propose: entry applied at %d but its response is no longer kept", index)
				}
				s.logger.Debug("forwarded entry's response not kept; proposing it again", "index", index)
				continue
			}
		}
		if !s.cfg.clustered() || !retriable(err) {
			return nil, 0, err
		}
		if waitErr := retry.wait(ctx, changed, time.Time{}); waitErr != nil {
			return nil, 0, fmt.Errorf("raft: propose: %w (last attempt: %w)", waitErr, err)
		}
	}
}

// retriable reports whether another attempt, perhaps at another leader,
// may succeed.
func retriable(err error) bool {
	return errors.Is(err, ErrNotLeader) || errors.Is(err, ErrLeadershipLost) || errors.Is(err, errForwardFailed)
}

func (s *Store) notLeaderError(op string) error {
	leaderAddr, leaderID := s.raft.LeaderWithID()
	return fmt.Errorf("raft: %s: %w", op, &NotLeaderError{LeaderID: string(leaderID), LeaderAddr: string(leaderAddr)})
}

// forwardPropose sends data to the leader and returns the index it was
// committed at.
func (s *Store) forwardPropose(ctx context.Context, data []byte) (uint64, error) {
	resp, err := s.callLeader(ctx, &rpcRequest{Op: opPropose, Body: data})
	if err != nil {
		return 0, err
	}
	return resp.Index, nil
}

// callLeader sends req to the leader this node knows. Any answer but
// success comes back as an error.
func (s *Store) callLeader(ctx context.Context, req *rpcRequest) (*rpcResponse, error) {
	_, leaderID := s.raft.LeaderWithID()
	if leaderID == "" || string(leaderID) == s.cfg.NodeID {
		return nil, s.notLeaderError(req.Op)
	}
	rec, ok := s.gossip.record(string(leaderID))
	if !ok || rec.meta.RPCAddr == "" {
		return nil, fmt.Errorf("raft: %s: %w: leader %s has no known cluster address", req.Op, errForwardFailed, leaderID)
	}
	req.Cluster, req.From = s.ClusterID(), s.cfg.NodeID
	resp, err := s.rpcClient.call(ctx, rec.meta.RPCAddr, req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("raft: %s: %w", req.Op, ctxErr)
		}
		return nil, fmt.Errorf("raft: %s: %w: %w", req.Op, errForwardFailed, err)
	}
	if err := responseError(req.Op, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// responseError turns an answer's code back into this package's errors.
func responseError(op string, resp *rpcResponse) error {
	switch resp.Code {
	case "":
		return nil
	case codeNotLeader:
		return fmt.Errorf("raft: %s at the leader: %w", op, &NotLeaderError{LeaderID: resp.LeaderID, LeaderAddr: resp.LeaderAddr})
	case codeLeadershipLost:
		return fmt.Errorf("raft: %s at the leader: %w", op, ErrLeadershipLost)
	case codeClosed, codeTimeout:
		return fmt.Errorf("raft: %s at the leader: %w: %s", op, errForwardFailed, resp.Error)
	case codeForbidden:
		// A node removed while away is added back by the leader's reconcile: retry.
		return fmt.Errorf("raft: %s at the leader: %w: %s", op, errForwardFailed, resp.Error)
	case codeClusterMismatch:
		return fmt.Errorf("raft: %s at the leader: %w: %s", op, ErrClusterMismatch, resp.Error)
	case codeUpgrading:
		return fmt.Errorf("raft: %s at the leader: %w: %s", op, ErrClusterUpgrading, resp.Error)
	default:
		return fmt.Errorf("raft: %s at the leader: %s (%s)", op, resp.Error, resp.Code)
	}
}

// handleRPC answers a cluster RPC call. Over TLS the caller is the node its
// certificate names, and it must be a server of the current raft
// configuration; what the request says about its sender is only logged.
func (s *Store) handleRPC(ctx context.Context, peer string, req *rpcRequest) *rpcResponse {
	// Every caller holds a certificate of the cluster (the listener checked it). Writes and reads
	// are for servers of the configuration only; the status probe is also for the leader asking
	// a member that has not yet received the configuration naming that leader.
	if s.cfg.Identity != nil && req.Op != opStatus && !s.isServer(peer) {
		s.logger.Warn("cluster RPC refused: the caller is not a server of this cluster", "peer", peer, "op", req.Op)
		return &rpcResponse{Code: codeForbidden,
			Error: fmt.Sprintf("node %q is not a server of the cluster of node %s", peer, s.cfg.NodeID)}
	}
	if mine := s.ClusterID(); req.Cluster == "" || req.Cluster != mine {
		return &rpcResponse{Code: codeClusterMismatch,
			Error: fmt.Sprintf("node %s of cluster %q called node %s of cluster %q", req.From, req.Cluster, s.cfg.NodeID, mine)}
	}
	timeout := time.Duration(req.TimeoutMS) * time.Millisecond
	if timeout <= 0 || timeout > rpcDefaultTimeout {
		timeout = rpcDefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch req.Op {
	case opPropose:
		return s.handlePropose(ctx, req.Body)
	case opReadIndex:
		index, err := s.leaderReadIndex(ctx)
		if err != nil {
			return s.errorResponse(err)
		}
		return &rpcResponse{Index: index}
	case opStatus:
		return s.handleStatus(req.Body)
	default:
		if resp := s.handleOperatorRPC(ctx, req); resp != nil {
			return resp
		}
		return &rpcResponse{Code: codeBadRequest, Error: fmt.Sprintf("unknown operation %q", req.Op)}
	}
}

// handlePropose applies a forwarded entry if this node leads. It does not
// retry: the follower does, at whichever node leads by then.
func (s *Store) handlePropose(ctx context.Context, data []byte) *rpcResponse {
	if s.raft.State() != hraft.Leader {
		return s.errorResponse(s.notLeaderError("propose"))
	}
	// The leader checks again: its view of the configuration is the one the entry commits in.
	if err := s.admit(data); err != nil {
		return s.errorResponse(err)
	}
	timeout, err := s.callTimeout(ctx)
	if err != nil {
		return s.errorResponse(err)
	}
	s.nudgeBegin()
	future := s.raft.Apply(data, timeout)
	drop := false
	if hook := s.hooks.forwardAccepted.Load(); hook != nil {
		drop = (*hook)(data)
	}
	err = waitFuture(ctx, future)
	s.nudgeEnd(err == nil)
	if err != nil {
		return s.errorResponse(s.futureError("propose", err))
	}
	if drop {
		return nil
	}
	return &rpcResponse{Index: future.Index()}
}

func (s *Store) errorResponse(err error) *rpcResponse {
	resp := &rpcResponse{Code: codeFailed, Error: err.Error()}
	var notLeader *NotLeaderError
	switch {
	case errors.As(err, &notLeader):
		resp.Code, resp.LeaderID, resp.LeaderAddr = codeNotLeader, notLeader.LeaderID, notLeader.LeaderAddr
	case errors.Is(err, ErrLeadershipLost):
		resp.Code = codeLeadershipLost
	case errors.Is(err, ErrClosed):
		resp.Code = codeClosed
	case errors.Is(err, ErrClusterUpgrading):
		resp.Code = codeUpgrading
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		resp.Code = codeTimeout
	}
	return resp
}
