package raft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	hraft "github.com/hashicorp/raft"
)

func TestClusterFormsFromOneSeed(t *testing.T) {
	c := startCluster(t, 3)
	leader := c.waitLeader()
	st := leader.store.Status()
	if st.Voters != 3 || st.NonVoters != 0 {
		t.Fatalf("leader status %+v, want 3 voters and no non-voters", st)
	}
	clusterID := st.ClusterID
	if clusterID == "" {
		t.Fatal("leader has no cluster id")
	}
	for _, n := range c.live() {
		if got := n.store.Status().ClusterID; got != clusterID {
			t.Errorf("%s cluster id %q, want the seed's %q", n.id, got, clusterID)
		}
		var members []Member
		waitFor(t, n.id+" sees three live voters", func() bool {
			members = n.store.Members()
			if len(members) != 3 {
				return false
			}
			for _, m := range members {
				if m.State != MemberAlive || m.Suffrage != Voter {
					return false
				}
			}
			return true
		})
		for _, m := range members {
			if m.Meta["http"] != m.NodeID+":http" || m.ClusterAddr == "" || m.RaftAddr == "" || m.GossipAddr == "" {
				t.Errorf("%s sees member %+v without its addresses or meta", n.id, m)
			}
			if m.Self != (m.NodeID == n.id) || m.Leader != (m.NodeID == leader.id) {
				t.Errorf("%s sees member %s with self=%v leader=%v", n.id, m.NodeID, m.Self, m.Leader)
			}
		}
	}
}

func TestWritesFromEveryNodeApplyOnAll(t *testing.T) {
	c := startCluster(t, 3)
	const perNode = 15
	var wg sync.WaitGroup
	errs := make(chan error, 3*perNode)
	for _, n := range c.live() {
		wg.Go(func() {
			for i := range perNode {
				payload := fmt.Sprintf("%s-%d", n.id, i)
				if _, _, err := n.store.Propose(testContext(t), []byte("rid-"+payload+"|"+payload)); err != nil {
					errs <- fmt.Errorf("Propose %s: %w", payload, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	items := c.waitConverged()
	if len(items) != 3*perNode {
		t.Fatalf("%d items applied, want %d", len(items), 3*perNode)
	}
	for _, n := range c.live() {
		for i := range perNode {
			if got := countOf(items, fmt.Sprintf("%s-%d", n.id, i)); got != 1 {
				t.Fatalf("%s-%d applied %d times", n.id, i, got)
			}
		}
	}
}

func TestFollowerForwardReturnsLocalResponse(t *testing.T) {
	c := startCluster(t, 3)
	leader := c.waitLeader()
	for _, n := range c.live() {
		if n == leader {
			continue
		}
		for i := range 5 {
			payload := fmt.Sprintf("from-%s-%d", n.id, i)
			resp, index := c.propose(n.id, "rid-"+payload, payload)
			// Propose returned, so this node has applied the entry, and the
			// response is its own machine's position for it.
			if n.store.AppliedIndex() < index {
				t.Fatalf("%s returned before applying index %d (applied %d)", n.id, index, n.store.AppliedIndex())
			}
			items := n.sm.items()
			if resp < 1 || resp > len(items) || items[resp-1] != payload {
				t.Fatalf("%s: response %d does not point at %q in its own items %q", n.id, resp, payload, items)
			}
		}
	}
}

func TestReadIndexFromEveryNode(t *testing.T) {
	c := startCluster(t, 3)
	leader := c.waitLeader()
	for i, n := range c.live() {
		payload := fmt.Sprintf("read-%d", i)
		c.propose(leader.id, "rid-"+payload, payload)
		// Nothing but ReadIndex makes n wait for the leader's write.
		index, err := n.store.ReadIndex(testContext(t))
		if err != nil {
			t.Fatalf("ReadIndex on %s: %v", n.id, err)
		}
		if !slices.Contains(n.sm.items(), payload) {
			t.Fatalf("%s: after ReadIndex (%d) the write %q acknowledged before it is missing", n.id, index, payload)
		}
		if n.store.AppliedIndex() < index {
			t.Fatalf("%s: ReadIndex returned %d before applying it", n.id, index)
		}
	}
}

func TestLeaderKilledNewLeaderOldRejoins(t *testing.T) {
	c := startCluster(t, 3, withPersistence())
	old := c.waitLeader()
	c.propose(old.id, "rid-before", "before")
	c.kill(old.id)

	var survivors []string
	for _, n := range c.live() {
		survivors = append(survivors, n.id)
	}
	newLeader := c.waitLeader(survivors...)
	if newLeader.id == old.id {
		t.Fatalf("closed node %s still leads", old.id)
	}
	for _, id := range survivors {
		c.propose(id, "rid-after-"+id, "after-"+id)
	}

	back := c.restart(old.id)
	c.propose(old.id, "rid-back", "back")
	items := c.waitConverged()
	want := []string{"before", "after-" + survivors[0], "after-" + survivors[1], "back"}
	if !slices.Equal(items, want) {
		t.Fatalf("items = %q, want %q", items, want)
	}
	if st := back.store.Status(); st.Voters != 3 {
		t.Fatalf("rejoined node sees %d voters, want 3", st.Voters)
	}
}

func TestPartitionedMinorityCannotCommitAndCatchesUp(t *testing.T) {
	c := startCluster(t, 3)
	minority := c.waitLeader()
	c.propose(minority.id, "rid-first", "first")
	c.network.Isolate(minority.id)

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, _, err := minority.store.Propose(ctx, []byte("rid-lost|lost")); err == nil {
		t.Fatal("the isolated old leader committed a write")
	}

	var majority []string
	for _, n := range c.live() {
		if n != minority {
			majority = append(majority, n.id)
		}
	}
	c.waitLeader(majority...)
	for _, id := range majority {
		c.propose(id, "rid-during-"+id, "during-"+id)
	}
	if slices.Contains(minority.sm.items(), "during-"+majority[0]) {
		t.Fatal("the isolated node applied a write while cut off")
	}

	c.network.HealAll()
	items := c.waitConverged()
	want := []string{"first", "during-" + majority[0], "during-" + majority[1]}
	if !slices.Equal(items, want) {
		t.Fatalf("after heal items = %q, want %q (the minority's write must not survive)", items, want)
	}
	c.propose(minority.id, "rid-healed", "healed")
	c.waitConverged()
}

func TestForwardedWriteLosingLeadershipIsRetried(t *testing.T) {
	tests := []struct {
		name string
		// fault runs on the leader once it accepted the forwarded entry.
		fault func(c *testCluster, leader *testNode) (dropReply bool)
		// wantDuplicate: the entry itself commits and so does the retry.
		wantDuplicate bool
	}{
		{
			name: "leader isolated before commit",
			fault: func(c *testCluster, leader *testNode) bool {
				c.network.Isolate(leader.id)
				return false
			},
		},
		{
			name:          "answer lost after commit",
			fault:         func(*testCluster, *testNode) bool { return true },
			wantDuplicate: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startCluster(t, 3)
			leader := c.waitLeader()
			var follower *testNode
			for _, n := range c.live() {
				if n != leader {
					follower = n
					break
				}
			}
			var once sync.Once
			fired := make(chan struct{})
			hook := func(data []byte) (drop bool) {
				if string(data) == "rid-x|x" {
					once.Do(func() {
						drop = tt.fault(c, leader)
						close(fired)
					})
				}
				return drop
			}
			leader.store.hooks.forwardAccepted.Store(&hook)

			resp, _ := c.propose(follower.id, "rid-x", "x")
			select {
			case <-fired:
			default:
				t.Fatal("the fault never fired: the entry was not forwarded to the leader")
			}
			if items := follower.sm.items(); resp < 1 || resp > len(items) || items[resp-1] != "x" {
				t.Fatalf("response %d does not point at x in %q", resp, items)
			}
			c.network.HealAll()
			items := c.waitConverged()
			if got := countOf(items, "x"); got != 1 {
				t.Fatalf("x applied %d times: %q", got, items)
			}
			if got := follower.sm.appliesOf("rid-x"); tt.wantDuplicate && got < 2 {
				t.Fatalf("request rid-x reached the state machine %d times, want the retry too", got)
			}
		})
	}
}

func TestOnLeadershipFollowsTheLeader(t *testing.T) {
	c := startCluster(t, 3)
	var mu sync.Mutex
	running := map[string]int{}
	for _, n := range c.live() {
		n.store.OnLeadership(func(ctx context.Context) {
			mu.Lock()
			running[n.id]++
			mu.Unlock()
			<-ctx.Done()
			mu.Lock()
			running[n.id]--
			mu.Unlock()
		})
	}
	runningOn := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var ids []string
		for id, count := range running {
			if count > 0 {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		return ids
	}
	first := c.waitLeader()
	waitFor(t, "the job on the leader only", func() bool { return slices.Equal(runningOn(), []string{first.id}) })

	if err := first.store.raft.LeadershipTransfer().Error(); err != nil {
		t.Fatalf("LeadershipTransfer: %v", err)
	}
	var second *testNode
	waitFor(t, "a new leader", func() bool {
		second = c.leader()
		return second != nil && second != first
	})
	waitFor(t, "the job moved to the new leader", func() bool {
		l := c.leader()
		return l != nil && slices.Equal(runningOn(), []string{l.id}) && l != first
	})
	c.kill(c.leader().id)
	waitFor(t, "the closed leader's job stopped", func() bool {
		for _, id := range runningOn() {
			if c.node(id).store.isClosed() {
				return false
			}
		}
		return true
	})
}

func TestOnMembershipReportsJoins(t *testing.T) {
	c := newTestCluster(t)
	seed := c.start("n1")
	c.waitLeader()
	views := make(chan []Member, 64)
	seed.store.OnMembership(func(members []Member) {
		select {
		case views <- members:
		default:
		}
	})
	c.start("n2", seed.store.GossipAddr())
	deadline := time.After(testTimeout)
	for {
		select {
		case members := <-views:
			if len(members) == 2 && members[1].NodeID == "n2" && members[1].State == MemberAlive &&
				members[1].Suffrage == Voter {
				return
			}
		case <-deadline:
			t.Fatal("no membership callback showed n2 as a live voter")
		}
	}
}

func TestTwoVotersAreWarnedAbout(t *testing.T) {
	logs := newRecordingHandler(slog.LevelWarn)
	c := newTestCluster(t, withLogger(slog.New(logs)))
	seed := c.start("n1")
	c.waitLeader()
	c.start("n2", seed.store.GossipAddr())
	c.waitConfigured(2)
	waitFor(t, "the two-voter warning", func() bool { return len(logs.find("exactly two raft voters")) > 0 })
}

func TestUnclusteredFollowerDoesNotRetry(t *testing.T) {
	cfg := memoryConfig("alone")
	cfg.Bootstrap = false
	s, err := Open(testContext(t), cfg, &listMachine{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.ReadIndex(testContext(t)); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("ReadIndex on an unclustered follower = %v, want ErrNotLeader", err)
	}
	if got := s.Members(); len(got) != 0 {
		t.Fatalf("Members of a store without configuration = %+v", got)
	}
}

func TestOnLeadershipOnASingleNode(t *testing.T) {
	s := openLeader(t, memoryConfig("solo"), &listMachine{})
	started := make(chan struct{})
	stopped := make(chan struct{})
	// Registered while already leading: starts at once.
	s.OnLeadership(func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		close(stopped)
	})
	select {
	case <-started:
	case <-time.After(testTimeout):
		t.Fatal("job registered on a leader never started")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	default:
		t.Fatal("Close returned before the leader job was cancelled and returned")
	}
}

func TestRestartedNodeAtNewAddressIsMoved(t *testing.T) {
	c := startCluster(t, 3, withPersistence())
	leader := c.waitLeader()
	var mover *testNode
	for _, n := range c.live() {
		if n != leader {
			mover = n
			break
		}
	}
	c.kill(mover.id)
	cfg := mover.cfg
	cfg.BindAddr = mover.id + "-moved"
	cfg.Bootstrap = false
	cfg.Join = []string{leader.store.GossipAddr()}
	c.open(cfg)
	waitFor(t, "the leader to record the new raft address", func() bool {
		l := c.leader()
		if l == nil {
			return false
		}
		configuration, ok := l.store.configuration()
		if !ok {
			return false
		}
		for _, server := range configuration.Servers {
			if string(server.ID) == mover.id {
				return string(server.Address) == cfg.BindAddr && server.Suffrage == hraft.Voter
			}
		}
		return false
	})
	c.propose(mover.id, "rid-moved", "moved")
	c.waitConverged()
}
