package testcluster

import (
	"context"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// TestClusterKillRestart exercises the harness itself: a leader exists, killing it elects
// another, a killed node's clients are cut, the node restarts at the same addresses and catches
// up, and the replicas converge.
func TestClusterKillRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three nodes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := Start(ctx, Options{Nodes: 3, Dir: t.TempDir(), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	leader := c.Leader()
	if leader < 0 {
		t.Fatal("no leader after Start")
	}
	other := (leader + 1) % c.N()
	cl, err := c.Guest(ctx, leader, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	if c.Up(leader) || c.Node(leader) != nil {
		t.Fatal("a killed node still counts as up")
	}
	if err := c.Kill(leader); err == nil {
		t.Error("killing a node that is down succeeded")
	}
	if _, err := cl.ReadMessage(ctx); err == nil {
		t.Error("a client of the killed node can still read")
	}
	if err := poll(ctx, 20*time.Millisecond, func() (bool, error) { return c.Leader() >= 0, nil }); err != nil {
		t.Fatalf("no new leader: %v", err)
	}

	// A change made while the node is down reaches it after the restart.
	bob, err := c.Guest(ctx, other, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if err := joinChannel(ctx, bob, "#while-down", nil); err != nil {
		t.Fatal(err)
	}
	before := c.Addrs(leader)
	if err := c.Restart(ctx, leader); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(ctx, leader); err == nil {
		t.Error("restarting a running node succeeded")
	}
	if c.Addrs(leader) != before || c.Node(leader).IRCAddr() != before.IRC {
		t.Errorf("the node came back at other addresses: %+v, IRC %s", c.Addrs(leader), c.Node(leader).IRCAddr())
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	carol, err := c.Guest(ctx, leader, "carol")
	if err != nil {
		t.Fatal(err)
	}
	if err := carol.Send("NAMES #while-down"); err != nil {
		t.Fatal(err)
	}
	if err := await(ctx, carol, 10*time.Second, nil, func(m ircmsg.Message) (bool, error) {
		return m.Command == "353" && m.Param(2) == "#while-down", nil
	}); err != nil {
		t.Fatalf("the restarted node does not know the channel made while it was down: %v", err)
	}
	states := c.States()
	if len(states) != 3 {
		t.Fatalf("%d node states, want 3", len(states))
	}
}

// TestClusterFaults exercises the fault injection: an isolated leader is replaced by the
// majority, which keeps accepting changes; a message sent on the majority side reaches a member
// on the isolated node once the partition heals; leadership moves on request; a slow disk slows
// but does not stop the cluster; the replicas converge.
func TestClusterFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three nodes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := Start(ctx, Options{Nodes: 3, Dir: t.TempDir(), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	leader := c.Leader()
	other := (leader + 1) % c.N()
	alice, err := c.Guest(ctx, leader, "alice", chatCaps...)
	if err != nil {
		t.Fatal(err)
	}
	bob, err := c.Guest(ctx, other, "bob", chatCaps...)
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range []*ircclient.Client{alice, bob} {
		if err := joinChannel(ctx, cl, "#cut", nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}

	if err := c.Isolate(leader); err != nil {
		t.Fatal(err)
	}
	if !c.Partitioned(leader, other) || c.Partitioned(other, (leader+2)%c.N()) {
		t.Fatal("Isolate cut the wrong links")
	}
	if err := poll(ctx, 20*time.Millisecond, func() (bool, error) {
		for _, j := range c.others(leader) {
			if c.Node(j).RaftStatus().Role == "leader" {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("the majority elected no leader: %v", err)
	}
	if err := joinChannel(ctx, bob, "#majority", nil); err != nil {
		t.Fatalf("the majority side cannot change state: %v", err)
	}
	if err := bob.Send("PRIVMSG #cut :across the cut"); err != nil {
		t.Fatal(err)
	}
	if err := await(ctx, bob, 10*time.Second, nil, func(m ircmsg.Message) (bool, error) {
		return m.Command == "PRIVMSG" && m.Param(1) == "across the cut", failOf(m, "PRIVMSG")
	}); err != nil {
		t.Fatalf("no echo of the message sent during the cut: %v", err)
	}

	c.Heal()
	if c.Partitioned(leader, other) {
		t.Fatal("Heal left a link cut")
	}
	if err := await(ctx, alice, 30*time.Second, nil, func(m ircmsg.Message) (bool, error) {
		return m.Command == "PRIVMSG" && m.Param(1) == "across the cut", nil
	}); err != nil {
		t.Fatalf("the message sent during the cut never reached the isolated node's member: %v", err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}

	from, to, err := c.TransferLeadership(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if from == to || to < 0 {
		t.Fatalf("leadership transfer from %d went to %d", from, to)
	}

	if err := c.SetDiskDelay(to, 30*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := joinChannel(ctx, alice, "#slow-disk", nil); err != nil {
		t.Fatalf("a change with the leader's disk slow: %v", err)
	}
	if err := c.SetDiskDelay(to, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
}
