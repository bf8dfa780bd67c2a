package fsm

import (
	"bytes"
	"maps"
	"slices"
)

// Node keys: the cluster pins each of its nodes to the key of the certificate it presented when
// the leader first reached it (the SHA-256 of its SubjectPublicKeyInfo), so a certificate issued
// later under the same node name, for another key, is refused on every plane between nodes even
// though the cluster's CA signed it. The leader pins the servers of the Raft configuration and
// unpins those that left it (raft's reconcile pass proposes both).

// TypeSetNodeKey is the command type of SetNodeKey.
const TypeSetNodeKey CommandType = 90

// ErrNodeKeyPinned is the result of pinning a node already pinned to another key.
const ErrNodeKeyPinned Code = 90

// NodeKeySize is the size of a pinned key sum (SHA-256); MaxNodeIDLen bounds a pinned node's id.
const (
	NodeKeySize  = 32
	MaxNodeIDLen = 255
)

func init() {
	registerCommands(map[CommandType]CommandSpec{TypeSetNodeKey: spec("set-node-key", (*Applier).setNodeKey)})
	nameCode(ErrNodeKeyPinned, "node-key-pinned")
}

// SetNodeKey pins Node to Key (NodeKeySize bytes), or unpins it when Key is empty. A node already
// pinned to another key stays pinned to it (ErrNodeKeyPinned): a node's key changes only by
// leaving the configuration and joining again.
type SetNodeKey struct {
	Node string `json:"node"`
	Key  []byte `json:"key,omitempty"`
}

func (SetNodeKey) CommandType() CommandType { return TypeSetNodeKey }

func (a *Applier) setNodeKey(c SetNodeKey) Result {
	if c.Node == "" || len(c.Node) > MaxNodeIDLen || (len(c.Key) != 0 && len(c.Key) != NodeKeySize) {
		return Result{Code: ErrInvalid}
	}
	old, pinned := a.st.nodeKeys[c.Node]
	switch {
	case len(c.Key) == 0 && !pinned:
		return Result{Code: NoChange}
	case len(c.Key) == 0:
		delete(a.st.nodeKeys, c.Node)
		if len(a.st.nodeKeys) == 0 {
			a.st.nodeKeys = nil
		}
		return Result{Code: OK}
	case pinned && bytes.Equal(old, c.Key):
		return Result{Code: NoChange}
	case pinned:
		return Result{Code: ErrNodeKeyPinned}
	}
	if a.st.nodeKeys == nil {
		a.st.nodeKeys = map[string][]byte{}
	}
	a.st.nodeKeys[c.Node] = bytes.Clone(c.Key)
	return Result{Code: OK}
}

// NodeKey is the key sum node is pinned to; ok is false for a node not pinned.
func (s *State) NodeKey(node string) (sum []byte, ok bool) {
	sum, ok = s.nodeKeys[node]
	return bytes.Clone(sum), ok
}

// PinnedNodes lists the pinned nodes, sorted.
func (s *State) PinnedNodes() []string { return slices.Sorted(maps.Keys(s.nodeKeys)) }
