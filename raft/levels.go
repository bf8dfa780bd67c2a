package raft

import (
	"errors"
	"fmt"

	hraft "github.com/hashicorp/raft"
)

// ErrClusterUpgrading is returned by Propose for an entry above the feature level of a server of
// the raft configuration (Config.EntryLevel): that server runs an earlier version, which could not
// apply it. Nothing was proposed; the entry is possible once every server runs this version.
var ErrClusterUpgrading = errors.New("raft: the cluster is being upgraded: this change is possible once every node runs this version")

// clusterLevel is the lowest feature level among the servers of the raft configuration, as
// gossiped: this node's own Config.FeatureLevel, another server's gossiped level (its last known
// one while it is down), and 0 for a server this node has not seen in gossip or whose gossip
// names no level (a node of a version before feature levels). With no configuration at hand it
// is 0.
func (s *Store) clusterLevel() int {
	conf, ok := s.configuration()
	if !ok {
		return 0
	}
	return minServerLevel(conf.Servers, s.cfg.NodeID, s.cfg.FeatureLevel, func(node string) (int, bool) {
		if s.gossip == nil {
			return 0, false
		}
		rec, ok := s.gossip.record(node)
		return rec.meta.Level, ok
	})
}

// minServerLevel is the lowest level of servers: self is at own, another server at what
// gossiped reports, or 0 when unknown.
func minServerLevel(servers []hraft.Server, self string, own int, gossiped func(node string) (int, bool)) int {
	lowest := own
	for _, srv := range servers {
		level := 0
		switch id := string(srv.ID); {
		case id == self:
			level = own
		default:
			if l, ok := gossiped(id); ok {
				level = l
			}
		}
		lowest = min(lowest, level)
	}
	return lowest
}

// admit refuses an entry above the cluster's feature level.
func (s *Store) admit(data []byte) error {
	if s.cfg.EntryLevel == nil {
		return nil
	}
	need := s.cfg.EntryLevel(data)
	if need <= 0 {
		return nil
	}
	if have := s.clusterLevel(); need > have {
		return fmt.Errorf("%w (the entry needs feature level %d, the servers apply %d)", ErrClusterUpgrading, need, have)
	}
	return nil
}

// ClusterLevel is the lowest feature level of the servers of the raft configuration, as this
// node knows them (see Config.FeatureLevel).
func (s *Store) ClusterLevel() int { return s.clusterLevel() }
