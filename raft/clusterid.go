package raft

import (
	"crypto/rand"
	"fmt"

	hraft "github.com/hashicorp/raft"
)

// clusterIDKey is where the cluster id lives in the stable store, beside
// raft's term and vote and outside the state machine: it must be checked
// before raft starts, so that a node never talks raft to another cluster.
var clusterIDKey = []byte("palaver.cluster-id")

// readClusterID returns the stored cluster id, or "" when none is stored.
// Both stable stores in use (raft-boltdb and raft's in-memory store) answer
// a missing key with an error reading "not found", as raft itself relies on.
func readClusterID(stable hraft.StableStore) (string, error) {
	value, err := stable.Get(clusterIDKey)
	if err != nil {
		if err.Error() == "not found" {
			return "", nil
		}
		return "", fmt.Errorf("raft: read cluster id: %w", err)
	}
	return string(value), nil
}

func writeClusterID(stable hraft.StableStore, id string) error {
	if err := stable.Set(clusterIDKey, []byte(id)); err != nil {
		return fmt.Errorf("raft: store cluster id: %w", err)
	}
	return nil
}

// newClusterID draws a random id (rand.Text: 26 base32 characters, at
// least 128 bits).
func newClusterID() string { return rand.Text() }
