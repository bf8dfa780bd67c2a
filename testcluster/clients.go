package testcluster

import (
	"context"
	"fmt"

	"github.com/palaver-chat/palaver/testcluster/ircclient"
)

// DialIRC connects a plain IRC client to node i. The cluster tracks it: Kill(i) closes it first,
// and Close closes it. Release it with Hangup when done.
func (c *Cluster) DialIRC(ctx context.Context, i int) (*ircclient.Client, error) {
	if !c.Up(i) {
		return nil, fmt.Errorf("testcluster: dial %s: node is down", c.addrs[i].Name)
	}
	cl, err := ircclient.Dial(ctx, c.addrs[i].IRC)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nodes[i] == nil { // killed while dialling
		cl.Close()
		return nil, fmt.Errorf("testcluster: dial %s: node went down", c.addrs[i].Name)
	}
	c.clients[i][cl] = struct{}{}
	return cl, nil
}

// Guest dials node i and registers as nick (no SASL) with the given capabilities.
func (c *Cluster) Guest(ctx context.Context, i int, nick string, caps ...string) (*ircclient.Client, error) {
	cl, err := c.DialIRC(ctx, i)
	if err != nil {
		return nil, err
	}
	if _, err := cl.Register(ctx, nick, caps...); err != nil {
		c.Hangup(cl)
		return nil, fmt.Errorf("testcluster: register %s on %s: %w", nick, c.addrs[i].Name, err)
	}
	return cl, nil
}

// Hangup closes a client from DialIRC and stops tracking it.
func (c *Cluster) Hangup(cl *ircclient.Client) {
	c.mu.Lock()
	for i := range c.clients {
		delete(c.clients[i], cl)
	}
	c.mu.Unlock()
	cl.Close()
}
