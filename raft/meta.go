package raft

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hashicorp/memberlist"
)

// nodeMeta is what a node gossips about itself: where its raft and cluster
// RPC listen, which cluster it belongs to, and the caller's opaque Meta.
type nodeMeta struct {
	Version   int    `json:"v"`
	RaftAddr  string `json:"r"`
	RPCAddr   string `json:"c"`
	ClusterID string `json:"id,omitempty"` // empty until the node joined a cluster
	// Keys are the fingerprints of the gossip keys the node holds (see gossip.chooseKey).
	Keys []string `json:"k,omitempty"`
	// Pins: the node keeps pins of node keys (NodeKeys, pins.go); the leader pins only once every
	// server says so, since a node of an older version stops at a command it does not know.
	Pins bool `json:"p,omitempty"`
	// Level is the highest feature level the node applies (Config.FeatureLevel); nodes of
	// versions before feature levels send none: level 0.
	Level int               `json:"l,omitempty"`
	Meta  map[string]string `json:"m,omitempty"`
}

const nodeMetaVersion = 1

var errBadNodeMeta = errors.New("raft: bad gossip metadata")

// encodeNodeMeta renders m within memberlist's size limit.
func encodeNodeMeta(m nodeMeta) ([]byte, error) {
	m.Version = nodeMetaVersion
	data, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("raft: encode gossip metadata: %w", err)
	}
	if len(data) > memberlist.MetaMaxSize {
		return nil, fmt.Errorf("raft: gossip metadata is %d bytes, memberlist allows %d: shorten Config.Meta",
			len(data), memberlist.MetaMaxSize)
	}
	return data, nil
}

// decodeNodeMeta parses another node's metadata. A node of a newer
// version is accepted as long as the fields read here still parse.
func decodeNodeMeta(data []byte) (nodeMeta, error) {
	var m nodeMeta
	if len(data) == 0 {
		return m, fmt.Errorf("%w: empty", errBadNodeMeta)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return nodeMeta{}, fmt.Errorf("%w: %w", errBadNodeMeta, err)
	}
	if m.Version < nodeMetaVersion {
		return nodeMeta{}, fmt.Errorf("%w: version %d", errBadNodeMeta, m.Version)
	}
	return m, nil
}
