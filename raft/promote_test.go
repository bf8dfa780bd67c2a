package raft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// ghost is a process that joins the gossip announcing the cluster's id and a
// raft address, as a node would, but whose raft never answers. With
// silentRPC it also accepts cluster RPC connections and never answers them;
// otherwise nothing listens at its cluster address.
func startGhost(t *testing.T, c *testCluster, clusterID string, silentRPC bool) {
	t.Helper()
	const id = "ghost"
	rpcAddr := id + ":cluster"
	if silentRPC {
		listener, err := c.network.openListener(id, rpcAddr)
		if err != nil {
			t.Fatal(err)
		}
		var held sync.WaitGroup
		var conns []net.Conn
		var mu sync.Mutex
		held.Go(func() {
			for {
				conn, err := listener.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				conns = append(conns, conn) // read nothing, answer nothing
				mu.Unlock()
			}
		})
		t.Cleanup(func() {
			listener.Close()
			held.Wait()
			mu.Lock()
			for _, conn := range conns {
				conn.Close()
			}
			mu.Unlock()
		})
	}
	g, err := startGossip(gossipOptions{
		nodeID:      id,
		network:     c.network,
		meta:        nodeMeta{RaftAddr: id + ":raft", RPCAddr: rpcAddr, ClusterID: clusterID},
		joinTimeout: 5 * time.Second,
		deadGrace:   time.Hour,
		keys:        testIdentity(t, id).GossipKeys(), // a member of the cluster that never answers
		logger:      c.logger,
		onChange:    func() {},
	})
	if err != nil {
		t.Fatalf("ghost gossip: %v", err)
	}
	t.Cleanup(func() { g.shutdown() })
	if err := g.join(testContext(t), []string{c.node("n1").store.GossipAddr()}, true, time.Now().Add(5*time.Second)); err != nil {
		t.Fatalf("ghost join: %v", err)
	}
}

func suffrageOf(s *Store, id string) Suffrage {
	for _, m := range s.Members() {
		if m.NodeID == id {
			return m.Suffrage
		}
	}
	return NotInConfiguration
}

func TestMemberThatNeverAnswersStaysNonVoter(t *testing.T) {
	for _, silentRPC := range []bool{false, true} {
		t.Run(fmt.Sprintf("rpc listening %v", silentRPC), func(t *testing.T) {
			logs := newRecordingHandler(slog.LevelInfo)
			c := newTestCluster(t, withLogger(slog.New(logs)), withStabilization(50*time.Millisecond))
			c.start("n1")
			leader := c.waitLeader()
			startGhost(t, c, leader.store.ClusterID(), silentRPC)

			waitFor(t, "the ghost added as a non-voter", func() bool { return suffrageOf(leader.store, "ghost") == NonVoter })
			// Many times the stabilization time and several probes later it is still a non-voter,
			// and the one voter keeps committing on its own.
			start, passes := time.Now(), leader.store.hooks.reconcilePasses.Load()
			waitFor(t, "reconcile passes well past the stabilization time", func() bool {
				return time.Since(start) > 20*50*time.Millisecond && leader.store.hooks.reconcilePasses.Load() >= passes+5
			})
			if got := suffrageOf(leader.store, "ghost"); got != NonVoter {
				t.Fatalf("ghost is %q, want a non-voter", got)
			}
			if st := leader.store.Status(); st.Voters != 1 || st.Role != "leader" {
				t.Fatalf("status %+v, want the single voter still leading", st)
			}
			for i := range 5 {
				ctx, cancel := context.WithTimeout(testContext(t), 2*time.Second)
				_, _, err := leader.store.Propose(ctx, []byte(fmt.Sprintf("r%d|x", i)))
				cancel()
				if err != nil {
					t.Fatalf("propose with a ghost member: %v", err)
				}
			}
			if len(logs.find("not promotable")) == 0 {
				t.Fatal("the leader never said why the ghost is not promoted")
			}
		})
	}
}

// gatedMachine holds every Apply until the gate opens.
type gatedMachine struct {
	*dedupMachine
	gate chan struct{}
}

func (m *gatedMachine) Apply(index uint64, data []byte) any {
	<-m.gate
	return m.dedupMachine.Apply(index, data)
}

func TestJoinerIsPromotedOnlyOnceCaughtUpAndStable(t *testing.T) {
	const stabilization = 300 * time.Millisecond
	c := newTestCluster(t, withStabilization(stabilization))
	c.start("n1")
	leader := c.waitLeader()
	for i := range 20 {
		c.propose("n1", fmt.Sprintf("r%d", i), "x")
	}

	// n2 receives the log but applies nothing until the gate opens.
	gate := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release) // lets n2 close
	cfg := c.config("n2", leader.store.GossipAddr())
	sm := &gatedMachine{dedupMachine: newDedupMachine(), gate: gate}
	store, err := Open(testContext(t), cfg, sm)
	if err != nil {
		t.Fatalf("Open n2: %v", err)
	}
	t.Cleanup(func() {
		release()
		store.Close()
	})

	waitFor(t, "n2 added as a non-voter", func() bool { return suffrageOf(leader.store, "n2") == NonVoter })
	start, passes := time.Now(), leader.store.hooks.reconcilePasses.Load()
	waitFor(t, "reconcile passes past the stabilization time", func() bool {
		return time.Since(start) > 3*stabilization && leader.store.hooks.reconcilePasses.Load() >= passes+3
	})
	if got := suffrageOf(leader.store, "n2"); got != NonVoter {
		t.Fatalf("n2 applied nothing and is %q, want a non-voter", got)
	}

	released := time.Now()
	release()
	waitFor(t, "n2 promoted", func() bool { return suffrageOf(leader.store, "n2") == Voter })
	if waited := time.Since(released); waited < stabilization {
		t.Fatalf("n2 promoted %v after catching up, before the %v stabilization time", waited, stabilization)
	}
	if st := store.Status(); st.AppliedIndex < 20 {
		t.Fatalf("promoted n2 applied only up to %d", st.AppliedIndex)
	}
	c.propose("n1", "after", "y")
}

func TestStatusCall(t *testing.T) {
	c := newTestCluster(t)
	n1 := c.start("n1")
	c.waitLeader()
	c.propose("n1", "a", "x")
	tests := []struct {
		name     string
		body     string
		wantCode string
	}{
		{"own id", `{"node":"n1"}`, ""},
		{"another node's id", `{"node":"n2"}`, codeBadRequest},
		{"malformed", `{"node":`, codeBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := n1.store.rpcClient.call(testContext(t), n1.store.rpcAddr, &rpcRequest{
				Op: opStatus, Cluster: n1.store.ClusterID(), From: "test", Body: []byte(tt.body)})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Code != tt.wantCode {
				t.Fatalf("code %q (%s), want %q", resp.Code, resp.Error, tt.wantCode)
			}
			if tt.wantCode == "" && (resp.LeaderID != "n1" || resp.Index != n1.store.Status().AppliedIndex) {
				t.Fatalf("answer %+v, want leader n1 and applied index %d", resp, n1.store.Status().AppliedIndex)
			}
		})
	}
	// A caller of another cluster gets nothing.
	resp, err := n1.store.rpcClient.call(testContext(t), n1.store.rpcAddr, &rpcRequest{
		Op: opStatus, Cluster: "other", From: "test", Body: []byte(`{"node":"n1"}`)})
	if err != nil || resp.Code != codeClusterMismatch {
		t.Fatalf("status from another cluster: %+v, %v", resp, err)
	}
}

func TestPromotionHealthRule(t *testing.T) {
	p := progress{self: "l", leaderApplied: 1000, required: 900}
	tests := []struct {
		name       string
		st         memberStatus
		wasHealthy bool
		want       string // substring of the reason; "" healthy
	}{
		{"no answer", memberStatus{err: errors.New("dial: no route")}, false, "does not answer"},
		{"follows no leader", memberStatus{applied: 1000}, false, "follows leader"},
		{"follows another leader", memberStatus{applied: 1000, leader: "x"}, true, "follows leader"},
		{"has not applied the log as first seen", memberStatus{applied: 899, leader: "l"}, false, "not yet 900"},
		{"behind that but already healthy", memberStatus{applied: 899, leader: "l"}, true, ""},
		{"trails too far", memberStatus{applied: 1000 - promotionMaxLag - 1, leader: "l"}, true, "trails the leader"},
		{"within the lag", memberStatus{applied: 1000 - promotionMaxLag, leader: "l"}, true, ""},
		{"ahead of the leader's applied index", memberStatus{applied: 1003, leader: "l"}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := p.unhealthy(tt.st, tt.wasHealthy)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Fatalf("unhealthy = %q, want %q", got, tt.want)
			}
		})
	}
}
