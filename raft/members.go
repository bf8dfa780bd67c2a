package raft

import (
	"maps"
	"slices"
	"sync"

	hraft "github.com/hashicorp/raft"
)

// MemberState is what gossip says about a member.
type MemberState string

const (
	// MemberAlive answers gossip probes (possibly suspected right now:
	// memberlist does not report suspicion).
	MemberAlive MemberState = "alive"
	// MemberDead failed its probes or left.
	MemberDead MemberState = "dead"
	// MemberUnknown is in the raft configuration but has not been seen in
	// gossip by this node.
	MemberUnknown MemberState = "unknown"
)

// Suffrage is a member's place in the raft configuration.
type Suffrage string

const (
	Voter    Suffrage = "voter"
	NonVoter Suffrage = "nonvoter"
	// NotInConfiguration: gossiping, but not (or no longer) a raft server.
	NotInConfiguration Suffrage = ""
)

// Member is one node of the cluster as this node sees it.
type Member struct {
	NodeID      string
	GossipAddr  string // empty when MemberUnknown
	RaftAddr    string
	ClusterAddr string            // cluster RPC address
	Meta        map[string]string // the node's Config.Meta
	State       MemberState
	Suffrage    Suffrage
	Leader      bool // the raft leader this node knows
	Self        bool // this node
}

// Members lists the cluster's nodes, sorted by id: every member gossip knows
// of this cluster (or not yet of any) and every server of the raft
// configuration. An unclustered store lists the raft configuration only.
func (s *Store) Members() []Member {
	byID := map[string]*Member{}
	self := s.cfg.NodeID
	clusterID := s.ClusterID()
	if s.gossip != nil {
		for name, r := range s.gossip.records() {
			if r.meta.ClusterID != "" && r.meta.ClusterID != clusterID {
				continue // a node of another cluster that found our gossip
			}
			state := MemberDead
			if r.alive {
				state = MemberAlive
			}
			byID[name] = &Member{
				NodeID:      name,
				GossipAddr:  r.addr,
				RaftAddr:    r.meta.RaftAddr,
				ClusterAddr: r.meta.RPCAddr,
				Meta:        r.meta.Meta,
				State:       state,
			}
		}
	}
	if configuration, ok := s.configuration(); ok {
		for _, server := range configuration.Servers {
			id := string(server.ID)
			m, ok := byID[id]
			if !ok {
				m = &Member{NodeID: id, RaftAddr: string(server.Address), State: MemberUnknown}
				byID[id] = m
			}
			switch server.Suffrage {
			case hraft.Voter:
				m.Suffrage = Voter
			case hraft.Nonvoter:
				m.Suffrage = NonVoter
			}
		}
	}
	if m, ok := byID[self]; ok {
		m.Self = true
		if m.State == MemberUnknown && !s.isClosed() {
			m.State = MemberAlive
		}
	}
	if s.raft != nil {
		if _, leaderID := s.raft.LeaderWithID(); leaderID != "" {
			if m, ok := byID[string(leaderID)]; ok {
				m.Leader = true
			}
		}
	}
	out := make([]Member, 0, len(byID))
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		out = append(out, *byID[id])
	}
	return out
}

// configuration asks raft for its latest configuration.
func (s *Store) configuration() (hraft.Configuration, bool) {
	if s.raft == nil || s.isClosed() {
		return hraft.Configuration{}, false
	}
	future := s.raft.GetConfiguration()
	if err := future.Error(); err != nil {
		return hraft.Configuration{}, false
	}
	return future.Configuration(), true
}

// OnMembership registers f to receive Members after every change of gossip
// membership or of the raft configuration, and once right after
// registration. Calls are serialized on one goroutine, coalesced when
// changes come faster than f returns; f must not block for long.
func (s *Store) OnMembership(f func([]Member)) {
	s.notifier.add(f)
}

// membershipNotifier calls the OnMembership callbacks.
type membershipNotifier struct {
	s *Store
	// lock tier 9 (leaf): callbacks run after releasing it
	mu      sync.Mutex
	subs    []func([]Member)
	kick    chan struct{}
	done    chan struct{}
	stopped chan struct{}
	// foreign remembers members of other clusters already logged.
	foreign map[string]bool
}

func startMembershipNotifier(s *Store) *membershipNotifier {
	n := &membershipNotifier{
		s:       s,
		kick:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		stopped: make(chan struct{}),
		foreign: map[string]bool{},
	}
	go n.loop()
	return n
}

func (n *membershipNotifier) add(f func([]Member)) {
	n.mu.Lock()
	n.subs = append(n.subs, f)
	n.mu.Unlock()
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

func (n *membershipNotifier) loop() {
	defer close(n.stopped)
	for {
		changed := n.s.membership.changed()
		n.warnForeignMembers()
		n.mu.Lock()
		subs := slices.Clone(n.subs)
		n.mu.Unlock()
		if len(subs) > 0 {
			members := n.s.Members()
			for _, f := range subs {
				f(members)
			}
		}
		select {
		case <-changed:
		case <-n.kick:
		case <-n.done:
			return
		}
	}
}

// warnForeignMembers logs, once per member, gossip members that announce
// another cluster id: a seed list pointing at the wrong cluster, found by a
// node that started from its own state.
func (n *membershipNotifier) warnForeignMembers() {
	if n.s.gossip == nil {
		return
	}
	mine := n.s.ClusterID()
	for name, r := range n.s.gossip.records() {
		if r.alive && r.meta.ClusterID != "" && r.meta.ClusterID != mine && !n.foreign[name] {
			n.foreign[name] = true
			n.s.logger.Error("a gossip member belongs to another cluster; it will not be added",
				"member", name, "its_cluster", r.meta.ClusterID, "cluster_id", mine)
		}
	}
}

func (n *membershipNotifier) stop() {
	close(n.done)
	<-n.stopped
}
