package raft

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// A node that restarts from its data finds its cluster through the gossip addresses of the
// members it last knew, saved in its data directory, besides any --join seeds. Without them a
// node started without --join (the one that bootstrapped the cluster) would come back alone: its
// raft configuration has the others' raft addresses, but forwarding writes and read-index requests
// needs their cluster addresses, which only gossip carries, and the others stop gossiping to a
// dead member after a while.
const gossipPeersFileName = "gossip-peers.json"

// loadGossipPeers reads the saved gossip addresses (none when the file is missing).
func loadGossipPeers(dir string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(dir, gossipPeersFileName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("raft: read saved gossip peers: %w", err)
	}
	var addrs []string
	if err := json.Unmarshal(data, &addrs); err != nil {
		return nil, fmt.Errorf("raft: saved gossip peers in %s: %w", dir, err)
	}
	return addrs, nil
}

// saveGossipPeers replaces the saved addresses (written to a temporary file, then renamed).
func saveGossipPeers(dir string, addrs []string) error {
	data, err := json.Marshal(addrs)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, gossipPeersFileName+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("raft: save gossip peers: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, gossipPeersFileName)); err != nil {
		return fmt.Errorf("raft: save gossip peers: %w", err)
	}
	return nil
}

// gossipPeersOf lists the gossip addresses of the other members, sorted.
func gossipPeersOf(members []Member) []string {
	var addrs []string
	for _, m := range members {
		if !m.Self && m.GossipAddr != "" {
			addrs = append(addrs, m.GossipAddr)
		}
	}
	slices.Sort(addrs)
	return slices.Compact(addrs)
}

// rememberGossipPeers is an OnMembership subscriber: it saves the other members' gossip
// addresses whenever they change.
func (s *Store) rememberGossipPeers(members []Member) {
	addrs := gossipPeersOf(members)
	s.peersMu.Lock()
	defer s.peersMu.Unlock()
	if len(addrs) == 0 || slices.Equal(addrs, s.savedPeers) {
		return
	}
	if err := saveGossipPeers(s.cfg.Dir, addrs); err != nil {
		s.logger.Warn("gossip peers not saved", "err", err)
		return
	}
	s.savedPeers = addrs
}

// seedsFor is what gossip joins and retries: the configured seeds, and for a node with raft
// state also the members it last knew.
func seedsFor(join, saved []string, hasState bool) []string {
	seeds := slices.Clone(join)
	if hasState {
		for _, a := range saved {
			if !slices.Contains(seeds, a) {
				seeds = append(seeds, a)
			}
		}
	}
	return seeds
}
