package testcluster

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Partition splits the cluster into the given sides: every link between nodes of different
// sides is cut (Raft, gossip, cluster RPC and the event exchange), in both directions, until
// Heal. Nodes in no side keep their links to everyone. Clients stay connected to their nodes.
// It needs the nodes in this process.
func (c *Cluster) Partition(sides ...[]int) error {
	if c.network == nil {
		return errNotInProcess
	}
	for k, side := range sides {
		for _, other := range sides[k+1:] {
			for _, i := range side {
				for _, j := range other {
					if i == j {
						return fmt.Errorf("testcluster: partition: node %d is on two sides", i)
					}
					c.network.Partition(c.addrs[i].Name, c.addrs[j].Name)
				}
			}
		}
	}
	return nil
}

// Isolate cuts node i off from every other node.
func (c *Cluster) Isolate(i int) error {
	return c.Partition([]int{i}, c.others(i))
}

// Heal restores every link.
func (c *Cluster) Heal() {
	if c.network != nil {
		c.network.HealAll()
	}
}

// Partitioned reports whether the links between nodes i and j are cut.
func (c *Cluster) Partitioned(i, j int) bool {
	return c.network != nil && c.network.Partitioned(c.addrs[i].Name, c.addrs[j].Name)
}

// SetDiskDelay makes every Raft log write of node i take d longer (0 restores the disk). It
// lasts across restarts of the node. It needs the nodes in this process.
func (c *Cluster) SetDiskDelay(i int, d time.Duration) error {
	if c.network == nil {
		return errNotInProcess
	}
	c.diskSlow[i].Store(int64(d))
	return nil
}

// StorePoison has node i store rows no peer can accept (node.StorePoison), in PoisonVenue. A node
// that is down stores nothing: that is not an error.
func (c *Cluster) StorePoison(ctx context.Context, i int) error {
	if c.network == nil {
		return errNotInProcess
	}
	n := c.Node(i)
	if n == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := n.StorePoison(ctx, PoisonVenue); err != nil {
		return fmt.Errorf("testcluster: %s: %w", c.addrs[i].Name, err)
	}
	return nil
}

// DeadLetters counts, for each in-process node that is up, the items it recorded as dead letters
// from its peers (nil for processes).
func (c *Cluster) DeadLetters() map[string]int64 {
	if c.network == nil {
		return nil
	}
	out := map[string]int64{}
	for i := range c.N() {
		n := c.Node(i)
		if n == nil {
			continue
		}
		var total int64
		if r := n.Health().Replication; r != nil {
			for _, p := range r.Peers {
				total += p.DeadLetters
			}
		}
		out[c.addrs[i].Name] = total
	}
	return out
}

func sum(m map[string]int64) int64 {
	var t int64
	for _, v := range m {
		t += v
	}
	return t
}

// TransferLeadership moves leadership off the current leader without stopping it, and waits
// until another node leads. It returns the old and the new leader.
func (c *Cluster) TransferLeadership(ctx context.Context) (from, to int, err error) {
	if c.network == nil {
		return -1, -1, errNotInProcess
	}
	from = c.Leader()
	if from < 0 {
		return -1, -1, fmt.Errorf("testcluster: leadership transfer: no leader")
	}
	n := c.Node(from)
	if n == nil {
		return from, -1, fmt.Errorf("testcluster: leadership transfer: %s went down", c.addrs[from].Name)
	}
	if err := n.TransferLeadership(ctx); err != nil {
		return from, -1, fmt.Errorf("testcluster: leadership transfer: %w", err)
	}
	to = -1
	err = poll(ctx, 10*time.Millisecond, func() (bool, error) {
		to = c.Leader()
		return to >= 0 && to != from, nil
	})
	if err != nil {
		return from, -1, fmt.Errorf("testcluster: leadership transfer: no new leader: %w", err)
	}
	return from, to, nil
}

// others lists every node index but i.
func (c *Cluster) others(i int) []int {
	return slices.DeleteFunc(seq(c.N()), func(j int) bool { return j == i })
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
