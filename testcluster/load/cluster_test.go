package load

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/node"
	"github.com/palaver-chat/palaver/raft/trust"
)

// startInProcessCluster starts three real nodes on loopback, as
// node/cluster_test.go does: the first bootstraps, the others join it.
// Kill closes a node (the test's stand-in for SIGKILL: raft does not hand
// leadership over on close, so the others must elect a new leader).
func startInProcessCluster(t *testing.T) ClusterTarget {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil)) // a killed leader makes the others log errors
	secret, err := trust.Generate()
	if err != nil {
		t.Fatal(err)
	}
	secretPath := filepath.Join(t.TempDir(), "cluster-secret")
	if err := secret.Save(secretPath); err != nil {
		t.Fatal(err)
	}
	start := func(name string, join []string) *node.Node {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cfg := node.LoopbackConfig(t.TempDir())
		cfg.NodeName, cfg.GossipAddr, cfg.ClusterAddr, cfg.Join, cfg.ClusterSecret = name, "127.0.0.1:0", "127.0.0.1:0", join, secretPath
		n, err := node.Start(ctx, cfg, logger)
		if err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		t.Cleanup(func() { n.Close() })
		return n
	}
	a := start("node-a.test", nil)
	nodes := []*node.Node{a}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, name := range []string{"node-b.test", "node-c.test"} {
		wg.Go(func() {
			n := start(name, []string{a.GossipAddr()})
			mu.Lock()
			nodes = append(nodes, n)
			mu.Unlock()
		})
	}
	wg.Wait()
	var target ClusterTarget
	for _, n := range nodes {
		target.Nodes = append(target.Nodes, ClusterNode{
			Name: n.Health().Node, IRCAddr: n.IRCAddr(), HTTPURL: "http://" + n.HTTPAddr(),
			Kill: func() error { return n.Close() },
		})
	}
	_, leader, err := WaitClusterSettled(testContext(t), target.Nodes, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Joiners become voters once caught up and stable; the leader-kill scenario needs all three.
	if err := WaitVoters(testContext(t), target.Nodes[leader].HTTPURL, 3); err != nil {
		t.Fatal(err)
	}
	return target
}

func TestClusterScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	cluster := startInProcessCluster(t)

	t.Run("B8 and B9 changes", func(t *testing.T) {
		for _, placement := range []Placement{PlaceFollowers, PlaceAny} {
			res, err := RunClusterChanges(testContext(t), cluster, ClusterChangesConfig{
				Writers: 3, Window: 2, Duration: 300 * time.Millisecond, Placement: placement,
				Kinds: []ChangeKind{ChangeTopic, ChangeMode, ChangePin}, Timeout: 20 * time.Second,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Sent == 0 || res.Acked != res.Sent || res.Observed != res.Sent || res.Failed != 0 || res.Unanswered != 0 {
				t.Errorf("%s: sent %d acked %d observed %d failed %d (%v) unanswered %d; writer errors %q",
					placement, res.Sent, res.Acked, res.Observed, res.Failed, res.Refusals, res.Unanswered, res.WriterErrors)
			}
			if res.Lost != 0 || res.LossChecked != 3 || res.Duplicates != 0 || res.UnknownObservations != 0 {
				t.Errorf("%s: lost %d, loss checked %d (%q), duplicates %d, unknown %d",
					placement, res.Lost, res.LossChecked, res.LossCheckErrors, res.Duplicates, res.UnknownObservations)
			}
			if res.Observe.Count != res.Observed || len(res.ObserveByKind) != 3 || res.Ack.Count != res.Acked || res.ChangesPerSecond <= 0 {
				t.Errorf("%s: observe %+v by kind %d, ack %+v, %f/s", placement, res.Observe, len(res.ObserveByKind), res.Ack, res.ChangesPerSecond)
			}
			for pair := range res.Placements {
				if placement == PlaceFollowers && strings.Contains(pair, res.Leader) {
					t.Errorf("the followers placement used the leader %s: %s", res.Leader, pair)
				}
			}
		}
	})

	t.Run("B15 cross-node messages", func(t *testing.T) {
		res, err := RunCrossNodeMessages(testContext(t), cluster, CrossNodeConfig{
			Senders: 2, ReceiversPerChannel: 2, Rate: 400, Duration: 300 * time.Millisecond, Timeout: 20 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Sent == 0 || res.Delivered != res.Expected || res.Expected != 2*res.Sent || res.Duplicates != 0 || res.Unknown != 0 || res.Refusals != 0 {
			t.Errorf("sent %d, delivered %d of %d, duplicates %d, unknown %d, refusals %d %q",
				res.Sent, res.Delivered, res.Expected, res.Duplicates, res.Unknown, res.Refusals, res.FirstRefusals)
		}
		if int64(res.Latency.Count) != res.Delivered || res.Latency.P50 <= 0 || int64(res.OriginEcho.Count) != res.Sent {
			t.Errorf("latency %+v for %d deliveries, origin echo %+v for %d sent", res.Latency, res.Delivered, res.OriginEcho, res.Sent)
		}
	})

	// Last: it stops the leader.
	t.Run("B10 leader kill", func(t *testing.T) {
		res, err := RunClusterChanges(testContext(t), cluster, ClusterChangesConfig{
			Writers: 2, Kinds: []ChangeKind{ChangeTopic}, Duration: 600 * time.Millisecond,
			Placement: PlaceFollowers, KillLeaderAfter: 200 * time.Millisecond, Timeout: 20 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		k := res.Kill
		if k == nil || k.Error != "" || k.Node != res.Leader || k.NewLeader == "" || k.NewLeader == k.Node || k.NewTerm <= k.Term {
			t.Fatalf("kill %+v (leader at the start %s)", k, res.Leader)
		}
		if res.Lost != 0 || res.LossChecked != 2 || res.Duplicates != 0 {
			t.Errorf("lost %d %q, loss checked %d (%q), duplicates %d", res.Lost, res.LostKeys, res.LossChecked, res.LossCheckErrors, res.Duplicates)
		}
		if res.Acked+res.Failed+res.Unanswered != res.Sent || res.Elections < 1 {
			t.Errorf("sent %d = acked %d + failed %d + unanswered %d? elections %d", res.Sent, res.Acked, res.Failed, res.Unanswered, res.Elections)
		}
		run := res.Run()
		if len(run.Measurements) == 0 || run.Notes[0] == "" {
			t.Errorf("report run %+v", run)
		}
	})
}

// startFakeHealthCluster serves only /api/v1/health, one server per role;
// the IRC addresses lead nowhere.
func startFakeHealthCluster(t *testing.T, roles ...string) ClusterTarget {
	var target ClusterTarget
	for i, role := range roles {
		name := fmt.Sprintf("fake-%d", i)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/api/v1/health" {
				http.NotFound(w, r)
				return
			}
			fmt.Fprintf(w, `{"server_name":"x","node":%q,"role":%q,"term":7}`, name, role)
		}))
		t.Cleanup(srv.Close)
		target.Nodes = append(target.Nodes, ClusterNode{Name: name, IRCAddr: "127.0.0.1:1", HTTPURL: srv.URL})
	}
	return target
}

func TestWaitClusterSettledReadsHealth(t *testing.T) {
	cluster := startFakeHealthCluster(t, "follower", "follower", "leader")
	health, leader, err := WaitClusterSettled(testContext(t), cluster.Nodes, 5*time.Second)
	if err != nil || leader != 2 || health[0] != (NodeHealth{Node: "fake-0", Role: "follower", Term: 7}) {
		t.Fatalf("WaitClusterSettled = %+v, %d, %v", health, leader, err)
	}
	leaderless := startFakeHealthCluster(t, "follower", "candidate", "follower")
	if _, _, err := WaitClusterSettled(testContext(t), leaderless.Nodes, 100*time.Millisecond); err == nil {
		t.Fatal("a cluster without a leader counted as settled")
	}
}

func TestClusterChangesRefusesToKillWithClientsOnTheLeader(t *testing.T) {
	// Nothing is dialled before the placement is checked.
	cluster := startFakeHealthCluster(t, "leader", "follower", "follower")
	cluster.Nodes[0].Kill = func() error { return nil }
	_, err := RunClusterChanges(testContext(t), cluster, ClusterChangesConfig{
		Placement: PlaceAny, Writers: 3, KillLeaderAfter: time.Second,
	})
	if err == nil {
		t.Fatal("a leader kill with clients on the leader was accepted")
	}
}
