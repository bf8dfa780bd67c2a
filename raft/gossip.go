package raft

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/palaver-chat/palaver/raft/trust"
)

// reconnectRounds: see gossip.reconnectEvery.
const reconnectRounds = 5

// gossip is this node's memberlist and its record of every member seen:
// the decoded metadata, alive or dead, and since when. memberlist forgets
// a dead node after a while and never says since when it is dead, so the
// records are kept here; the leader's reconcile loop reads them.
type gossip struct {
	self       string
	logger     *slog.Logger
	ml         *memberlist.Memberlist
	advertised string // gossip address, host:port
	seeds      []string
	onChange   func()
	// keys are the gossip keys, newest first (nil: gossip in the clear, in-process only);
	// fingerprints their names in the metadata.
	keys         [][]byte
	fingerprints []string
	keyring      *memberlist.Keyring

	// reconnectEvery is how often the seeds are retried while this node is
	// alone; dead members are asked to merge state again every
	// reconnectRounds of it: memberlist never probes a dead node, so two
	// sides of a healed partition would otherwise stay apart.
	reconnectEvery time.Duration
	// forgetAfter is how long a dead member's record is kept.
	forgetAfter time.Duration

	// lock tier 9 (leaf): memberlist calls in holding its own locks; nothing calls memberlist under it
	mu        sync.Mutex
	meta      nodeMeta
	members   map[string]*memberRecord
	joining   bool
	conflicts []string // addresses of live members that hold our name, seen while joining

	done chan struct{}
	wg   sync.WaitGroup
}

// memberRecord is what this node knows about one member.
type memberRecord struct {
	name  string
	addr  string // gossip address, host:port
	meta  nodeMeta
	alive bool
	since time.Time // of the last alive/dead change
}

// gossipOptions are the parts of Config the gossip layer needs.
type gossipOptions struct {
	nodeID      string
	bindAddr    string // TCP; or the in-process address with network
	advertise   string
	network     *InmemNetwork
	seeds       []string
	meta        nodeMeta
	joinTimeout time.Duration
	deadGrace   time.Duration
	keys        [][]byte // newest first; nil: no encryption (in-process only)
	logger      *slog.Logger
	onChange    func()
	guard       *connGuard // bounds incoming streams over TCP
}

// startGossip creates the memberlist (bound and running, but alone until
// join).
func startGossip(opts gossipOptions) (*gossip, error) {
	// Checked with a cluster id in, as it will be gossiped later.
	withID := opts.meta
	withID.ClusterID = newClusterID()
	if _, err := encodeNodeMeta(withID); err != nil {
		return nil, err
	}
	for _, k := range opts.keys {
		opts.meta.Keys = append(opts.meta.Keys, keyFingerprint(k))
	}
	g := &gossip{
		keys:         opts.keys,
		fingerprints: opts.meta.Keys,
		self:         opts.nodeID,
		logger:       opts.logger,
		seeds:        opts.seeds,
		onChange:     opts.onChange,
		meta:         opts.meta,
		members:      map[string]*memberRecord{},
		forgetAfter:  3 * opts.deadGrace,
		done:         make(chan struct{}),
	}
	mc, err := g.memberlistConfig(opts)
	if err != nil {
		return nil, err
	}
	g.reconnectEvery = mc.ProbeInterval
	ml, err := memberlist.Create(mc)
	if err != nil {
		if mc.Transport != nil {
			mc.Transport.Shutdown()
		}
		return nil, fmt.Errorf("raft: start gossip on %s: %w", opts.bindAddr, err)
	}
	g.ml = ml
	// Read once now: memberlist rewrites its local node (UpdateNode) without
	// a lock readers of LocalNode could take.
	g.advertised = ml.LocalNode().Address()
	g.wg.Go(g.reconnectLoop)
	return g, nil
}

func (g *gossip) memberlistConfig(opts gossipOptions) (*memberlist.Config, error) {
	var mc *memberlist.Config
	if opts.network != nil {
		// In-process: every delay is a channel send, so probe and gossip
		// often and declare a silent node dead within about a second.
		mc = memberlist.DefaultLocalConfig()
		mc.ProbeInterval = 200 * time.Millisecond
		mc.ProbeTimeout = 100 * time.Millisecond
		mc.GossipInterval = 30 * time.Millisecond
		mc.PushPullInterval = 2 * time.Second
		mc.GossipToTheDeadTime = 5 * time.Second
		addr := opts.bindAddr
		if addr == "" {
			addr = opts.network.gossipAddrFor(opts.nodeID)
		}
		transport, err := opts.network.openGossip(opts.nodeID, addr)
		if err != nil {
			return nil, err
		}
		mc.Transport = transport
	} else {
		mc = memberlist.DefaultLANConfig()
		host, port, err := splitHostPort(opts.bindAddr)
		if err != nil {
			return nil, fmt.Errorf("raft: GossipAddr: %w", err)
		}
		if opts.guard != nil {
			transport, err := newGuardedGossip(host, port, opts.guard, opts.logger)
			if err != nil {
				return nil, err
			}
			port = transport.GetAutoBindPort()
			mc.Transport = transport
		}
		mc.BindAddr, mc.BindPort = host, port
		mc.AdvertisePort = port
		if opts.advertise != "" {
			host, port, err := splitHostPort(opts.advertise)
			if err != nil {
				return nil, fmt.Errorf("raft: GossipAdvertise: %w", err)
			}
			mc.AdvertiseAddr, mc.AdvertisePort = host, port
		}
		// A join must fail within JoinTimeout even when a seed swallows
		// packets instead of refusing the connection.
		mc.TCPTimeout = min(mc.TCPTimeout, opts.joinTimeout)
	}
	mc.Name = opts.nodeID
	if len(opts.keys) > 0 {
		// Every packet and stream is encrypted and authenticated with the cluster's keys: a
		// process without one can neither join nor read. It starts with the oldest key, which
		// every member of a cluster mid-rotation holds, and moves to the newest all members
		// hold once it sees them (chooseKey).
		keyring, err := memberlist.NewKeyring(opts.keys, opts.keys[len(opts.keys)-1])
		if err != nil {
			return nil, fmt.Errorf("raft: gossip keyring: %w", err)
		}
		mc.Keyring = keyring
		g.keyring = keyring
		mc.GossipVerifyIncoming = true
		mc.GossipVerifyOutgoing = true
	}
	mc.Delegate = (*gossipDelegate)(g)
	mc.Events = (*gossipDelegate)(g)
	mc.Conflict = (*gossipDelegate)(g)
	// A node restarted at a new address may take its name back as soon as
	// its old incarnation is known dead; a live holder is a conflict.
	mc.DeadNodeReclaimTime = time.Nanosecond
	mc.Logger = newMemberlistLogger(opts.logger)
	return mc, nil
}

func splitHostPort(addr string) (string, int, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port in %q", addr)
	}
	return host, port, nil
}

// addr is this node's advertised gossip address.
func (g *gossip) addr() string { return g.advertised }

// join merges state with any of seeds. With retry it keeps trying until
// deadline; otherwise one round. A live member holding this node's name
// fails it with ErrDuplicateNodeName whatever the rest of the round did.
func (g *gossip) join(ctx context.Context, seeds []string, retry bool, deadline time.Time) error {
	g.mu.Lock()
	g.joining, g.conflicts = true, nil
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.joining = false
		g.mu.Unlock()
	}()
	backoff := newBackoff(50*time.Millisecond, time.Second)
	for {
		contacted, err := g.ml.Join(seeds)
		g.mu.Lock()
		conflicts := g.conflicts
		g.mu.Unlock()
		if len(conflicts) > 0 {
			return fmt.Errorf("%w: %q is already a live member at %v", ErrDuplicateNodeName, g.self, conflicts)
		}
		if contacted > 0 {
			return nil
		}
		if err == nil {
			err = errors.New("no seed answered")
		}
		g.nextKey()
		if !retry || time.Now().After(deadline) {
			return fmt.Errorf("%w: %v: %w", ErrJoinFailed, seeds, err)
		}
		if err := backoff.wait(ctx, nil, deadline); err != nil {
			return fmt.Errorf("%w: %v: %w", ErrJoinFailed, seeds, err)
		}
	}
}

// setClusterID gossips the cluster id this node belongs to. UpdateNode
// queues the broadcast and then waits for a gossip round to carry it; the
// wait is cut short (the queued broadcast still goes out, and push-pull
// carries the metadata too) so that neither Open nor Close waits on it.
func (g *gossip) setClusterID(id string) {
	g.mu.Lock()
	changed := g.meta.ClusterID != id
	g.meta.ClusterID = id
	g.mu.Unlock()
	if !changed {
		return
	}
	if err := g.ml.UpdateNode(time.Millisecond); err != nil {
		g.logger.Debug("cluster id queued for gossip", "err", err)
	}
}

// clusterIDs returns the cluster ids other live members announce.
func (g *gossip) clusterIDs() map[string][]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	ids := map[string][]string{}
	for _, r := range g.members {
		if r.name != g.self && r.alive && r.meta.ClusterID != "" {
			ids[r.meta.ClusterID] = append(ids[r.meta.ClusterID], r.name)
		}
	}
	return ids
}

// records copies every member record.
func (g *gossip) records() map[string]memberRecord {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]memberRecord, len(g.members))
	for name, r := range g.members {
		copied := *r
		copied.meta.Meta = maps.Clone(r.meta.Meta)
		out[name] = copied
	}
	return out
}

// record returns one member's record.
func (g *gossip) record(name string) (memberRecord, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, ok := g.members[name]
	if !ok {
		return memberRecord{}, false
	}
	return *r, true
}

// aliveOthers counts live members besides this node.
func (g *gossip) aliveOthers() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, r := range g.members {
		if r.alive && r.name != g.self {
			n++
		}
	}
	return n
}

// reconnectLoop retries the seeds while this node sees no other member
// (every tick: a restarted cluster whose nodes all came up alone finds
// itself again quickly), and every reconnectRounds ticks asks dead members
// to merge state again and forgets members dead for long.
func (g *gossip) reconnectLoop() {
	ticker := time.NewTicker(g.reconnectEvery)
	defer ticker.Stop()
	for round := 1; ; round++ {
		select {
		case <-g.done:
			return
		case <-ticker.C:
		}
		if len(g.seeds) > 0 && g.aliveOthers() == 0 {
			if _, err := g.ml.Join(g.seeds); err == nil {
				g.logger.Info("gossip rejoined through a seed", "seeds", g.seeds)
			} else {
				g.nextKey()
			}
		}
		g.chooseKey()
		if round%reconnectRounds != 0 {
			continue
		}
		var dead []string
		g.mu.Lock()
		for name, r := range g.members {
			switch {
			case r.alive || name == g.self:
			case time.Since(r.since) > g.forgetAfter:
				delete(g.members, name)
			default:
				dead = append(dead, r.addr)
			}
		}
		g.mu.Unlock()
		if len(dead) > 0 {
			g.ml.Join(dead)
		}
	}
}

// keyFingerprint names a gossip key in the metadata: 4 bytes of its SHA-256.
func keyFingerprint(key []byte) string { return trust.Fingerprint(key)[:8] }

// chooseKey makes the newest key that every live member announces holding the one this node
// encrypts with: during a rotation the members holding only the old key keep reading, and the
// cluster moves to the new key once every member holds it.
func (g *gossip) chooseKey() {
	if len(g.keys) < 2 {
		return
	}
	g.mu.Lock()
	held := make([]map[string]bool, 0, len(g.members))
	for _, r := range g.members {
		if r.alive && r.name != g.self {
			held = append(held, setOf(r.meta.Keys))
		}
	}
	g.mu.Unlock()
	if len(held) == 0 {
		return // alone: keep the key the joins are trying (nextKey)
	}
	for i, k := range g.keys {
		common := true
		for _, h := range held {
			common = common && h[g.fingerprints[i]]
		}
		if common {
			g.useKey(k)
			return
		}
	}
}

// nextKey moves to the next older key (from the oldest: the newest) after a join that reached no
// seed: the seeds may hold only some of this node's keys.
func (g *gossip) nextKey() {
	if len(g.keys) < 2 {
		return
	}
	primary := g.keyring.GetPrimaryKey()
	for i, k := range g.keys {
		if bytes.Equal(k, primary) {
			g.useKey(g.keys[(i+1)%len(g.keys)])
			return
		}
	}
}

func (g *gossip) useKey(k []byte) {
	if bytes.Equal(g.keyring.GetPrimaryKey(), k) {
		return
	}
	if err := g.keyring.UseKey(k); err != nil {
		g.logger.Error("gossip key change failed", "err", err)
		return
	}
	g.logger.Info("gossip now encrypts with another key", "key", keyFingerprint(k))
}

func setOf(items []string) map[string]bool {
	out := make(map[string]bool, len(items))
	for _, it := range items {
		out[it] = true
	}
	return out
}

// shutdown leaves gossip without a leave message: the others see the node
// fail, as after a crash, and the leader's grace period decides.
func (g *gossip) shutdown() error {
	close(g.done)
	err := g.ml.Shutdown()
	g.wg.Wait()
	if err != nil {
		return fmt.Errorf("raft: stop gossip: %w", err)
	}
	return nil
}

// gossipDelegate receives memberlist's callbacks. memberlist calls them
// holding its own locks: they only record and signal.
type gossipDelegate gossip

var (
	_ memberlist.Delegate         = (*gossipDelegate)(nil)
	_ memberlist.EventDelegate    = (*gossipDelegate)(nil)
	_ memberlist.ConflictDelegate = (*gossipDelegate)(nil)
)

func (d *gossipDelegate) NodeMeta(limit int) []byte {
	d.mu.Lock()
	meta := d.meta
	d.mu.Unlock()
	data, err := encodeNodeMeta(meta)
	if err != nil || len(data) > limit {
		d.logger.Error("gossip metadata does not fit", "err", err, "limit", limit)
		return nil
	}
	return data
}

func (d *gossipDelegate) NotifyMsg([]byte)                {}
func (d *gossipDelegate) GetBroadcasts(int, int) [][]byte { return nil }
func (d *gossipDelegate) LocalState(bool) []byte          { return nil }
func (d *gossipDelegate) MergeRemoteState([]byte, bool)   {}
func (d *gossipDelegate) NotifyJoin(n *memberlist.Node)   { d.update(n, true) }
func (d *gossipDelegate) NotifyUpdate(n *memberlist.Node) { d.update(n, true) }
func (d *gossipDelegate) NotifyLeave(n *memberlist.Node)  { d.update(n, false) }

func (d *gossipDelegate) update(n *memberlist.Node, alive bool) {
	meta, err := decodeNodeMeta(n.Meta)
	if err != nil && alive {
		d.logger.Warn("ignoring gossip member with unreadable metadata", "member", n.Name, "err", err)
		return
	}
	d.mu.Lock()
	r, ok := d.members[n.Name]
	if !ok {
		r = &memberRecord{name: n.Name}
		d.members[n.Name] = r
	}
	if !ok || r.alive != alive {
		r.since = time.Now()
	}
	r.alive = alive
	r.addr = n.Address()
	if err == nil {
		r.meta = meta
	}
	d.mu.Unlock()
	d.onChange()
}

func (d *gossipDelegate) NotifyConflict(existing, other *memberlist.Node) {
	if existing.Name != d.self {
		d.logger.Warn("two gossip members claim one name", "name", existing.Name,
			"known_at", existing.Address(), "claimed_at", other.Address())
		return
	}
	d.mu.Lock()
	joining := d.joining
	if joining {
		d.conflicts = append(d.conflicts, other.Address())
	}
	d.mu.Unlock()
	d.logger.Error("another live node uses this node's name", "name", existing.Name, "at", other.Address())
}
