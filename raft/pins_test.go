package raft

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/raft/trust"
)

// sharedPins is a NodeKeys every node of a test cluster shares, with the state machine's rules
// (raft/fsm SetNodeKey): a pinned node keeps its key until it is unpinned.
type sharedPins struct {
	mu   sync.Mutex
	pins map[string][]byte
}

func (p *sharedPins) NodeKey(node string) ([]byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	sum, ok := p.pins[node]
	return sum, ok
}

func (p *sharedPins) PinnedNodes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Sorted(maps.Keys(p.pins))
}

func (p *sharedPins) PinNodeKey(_ context.Context, node string, sum []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	old, ok := p.pins[node]
	switch {
	case sum == nil:
		delete(p.pins, node)
	case ok && !bytes.Equal(old, sum):
		return errors.New("pinned to another key")
	default:
		p.pins[node] = sum
	}
	return nil
}

func (p *sharedPins) is(node string, sum []byte) bool {
	got, ok := p.NodeKey(node)
	return ok == (sum != nil) && bytes.Equal(got, sum)
}

// TestLeaderPinsNodeKeys: the leader pins every server to the key its certificate holds, after
// which a certificate issued with the secret in a server's name for another key is refused; a
// server removed from the configuration is unpinned, and its name joins again with a new key.
func TestLeaderPinsNodeKeys(t *testing.T) {
	pins := &sharedPins{pins: map[string][]byte{}}
	c := startCluster(t, 3, withNodeKeys(pins), withGrace(500*time.Millisecond))
	waitFor(t, "three nodes pinned", func() bool {
		for _, n := range c.live() {
			if !pins.is(n.id, n.cfg.Identity.KeySum()) {
				return false
			}
		}
		return true
	})

	minted := testIdentity(t, "n2")
	cert, err := minted.Certificate()
	if err != nil {
		t.Fatal(err)
	}
	n1 := c.node("n1").cfg.Identity
	if _, err := n1.Verify(cert.Certificate, x509.ExtKeyUsageClientAuth); !errors.Is(err, trust.ErrNotClusterPeer) {
		t.Fatalf("a certificate minted for pinned n2 was accepted: %v", err)
	}
	real, _ := c.node("n2").cfg.Identity.Certificate()
	if node, err := n1.Verify(real.Certificate, x509.ExtKeyUsageClientAuth); err != nil || node != "n2" {
		t.Fatalf("n2's own certificate: %q %v", node, err)
	}

	// n3 dies and is removed after the grace: its pin goes with it.
	c.kill("n3")
	waitFor(t, "n3 unpinned after its removal", func() bool {
		leader := c.leader()
		return leader != nil && !leader.store.isServer("n3") && pins.is("n3", nil)
	})
	// A new n3 (a new key) joins and is pinned to its key.
	n3 := c.start("n3", c.node("n1").store.GossipAddr())
	waitFor(t, "the new n3 pinned to its own key", func() bool { return pins.is("n3", n3.cfg.Identity.KeySum()) })
	c.waitConfigured(3)
}

// TestPinsWaitForEveryServer: while a server runs a version that keeps no pins (a rolling
// upgrade), the leader pins no more nodes, since that server would stop at the command; once it
// runs one that does, every server is pinned.
func TestPinsWaitForEveryServer(t *testing.T) {
	pins := &sharedPins{pins: map[string][]byte{}}
	c := newTestCluster(t, withNodeKeys(pins))
	c.start("n1")
	leader := c.waitLeader()
	old := c.config("n2", leader.store.GossipAddr())
	old.NodeKeys = nil
	c.open(old)
	c.waitConfigured(2)
	passes := leader.store.hooks.reconcilePasses.Load()
	waitFor(t, "five reconcile passes with both servers configured", func() bool {
		return leader.store.hooks.reconcilePasses.Load() >= passes+5
	})
	if _, ok := pins.NodeKey("n2"); ok {
		t.Fatal("n2 pinned while it keeps no pins")
	}
	c.kill("n2")
	upgraded := old
	upgraded.NodeKeys, upgraded.Bootstrap = pins, false
	n2 := c.open(upgraded)
	waitFor(t, "both pinned once n2 keeps pins", func() bool {
		return pins.is("n1", leader.cfg.Identity.KeySum()) && pins.is("n2", n2.cfg.Identity.KeySum())
	})
}
