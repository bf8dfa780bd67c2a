package irc_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
	"github.com/palaver-chat/palaver/testcluster/irctest"
)

// A reader who resumes after the last message it read (CHATHISTORY AFTER msgid=) is given every
// message its node delivered after that one, also one stored before it: a message from another
// node, stamped earlier and stored on the reader's node first, but still on its way to that node's
// readers when a local client's message was stored and delivered.
func TestResumeAfterGetsAPeersMessageDeliveredLater(t *testing.T) {
	var started atomic.Int32
	var hold atomic.Bool // set: node b's next delivery of a peer's message waits for release
	entered, release := make(chan struct{}), make(chan struct{})
	nodes := startNamedCluster(t, "resume", func(c *Config) {
		if started.Add(1) != 2 { // node b is the second node started
			return
		}
		c.Faults = &node.Faults{PanicAt: func(point string) bool {
			if point == node.PanicExchangeDeliver && hold.CompareAndSwap(true, false) {
				close(entered)
				<-release
			}
			return false
		}}
	})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(free) // before the nodes close

	a, b := nodes[0], nodes[1]
	caps := []string{"message-tags", "echo-message", "server-time", "batch", "draft/chathistory"}
	alice, _ := guest(t, a, "alice", caps...)
	bob, _ := guest(t, b, "bob", caps...)
	carol, _ := guest(t, b, "carol", caps...)
	for _, c := range []*ircclient.Client{alice, bob, carol} {
		c.Send("JOIN #resume")
		expect(t, c, "366", "#resume")
	}

	hold.Store(true)
	alice.Send("PRIVMSG #resume :from node a, first")
	select {
	case <-entered: // stored on node b, not yet delivered to its readers
	case <-time.After(irctest.Timeout):
		t.Fatal("node b never delivered alice's message")
	}
	bob.Send("PRIVMSG #resume :from node b, second")
	second := expect(t, bob, "PRIVMSG", "from node b, second").Tags["msgid"]
	got := readUntil(t, carol, "bob's message", func(m ircmsg.Message) bool { return m.Command == "PRIVMSG" })
	if last := got[len(got)-1]; last.Param(1) != "from node b, second" {
		t.Fatalf("carol read %q first, want bob's message (alice's is held)", last.Param(1))
	}

	// Carol's connection ends here, having read bob's message last; she resumes after it.
	carol2, _ := guest(t, b, "carol2", caps...)
	carol2.Send("JOIN #resume")
	expect(t, carol2, "366", "#resume")
	drain(t, carol2)
	carol2.Send("CHATHISTORY AFTER #resume msgid=" + second + " 10")
	_, body := batchBody(t, carol2, "chathistory")
	if ts := texts(body); len(ts) != 1 || ts[0] != "from node a, first" {
		t.Fatalf("CHATHISTORY AFTER bob's message = %q, want alice's message, delivered after it", ts)
	}
	free()
	expect(t, carol, "PRIVMSG", "from node a, first")
}
