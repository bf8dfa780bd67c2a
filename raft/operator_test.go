package raft

import (
	"testing"
)

// TestFillDerived checks lag (from the leader's applied index, or the highest when the leader did
// not answer) and the exchange position (other reporting nodes' heads minus the node's cursors).
func TestFillDerived(t *testing.T) {
	report := func(node, role string, applied uint64, head int64, cursors map[string]int64) NodeReport {
		return NodeReport{Node: node, Role: role, AppliedIndex: applied, NodeExtra: NodeExtra{LogHead: head, InCursors: cursors}}
	}
	tests := []struct {
		name       string
		leader     string
		nodes      []NodeReport
		wantLag    []uint64
		wantBehind []int64
	}{
		{"caught up", "a", []NodeReport{
			report("a", "leader", 10, 5, map[string]int64{"b": 7}),
			report("b", "follower", 10, 7, map[string]int64{"a": 5}),
		}, []uint64{0, 0}, []int64{0, 0}},
		{"a follower behind in both planes", "a", []NodeReport{
			report("a", "leader", 50, 9, map[string]int64{"b": 3, "c": 0}),
			report("b", "follower", 20, 3, map[string]int64{"a": 4, "c": 0}),
			report("c", "follower", 50, 0, map[string]int64{"a": 9, "b": 3}),
		}, []uint64{0, 30, 0}, []int64{0, 5, 0}},
		{"leader unreachable: lag from the highest applied, its head unknown", "a", []NodeReport{
			{Node: "a", Role: "unreachable"},
			report("b", "follower", 40, 2, map[string]int64{"a": 1}),
			report("c", "follower", 45, 0, map[string]int64{"b": 0}),
		}, []uint64{0, 5, 0}, []int64{-1, 0, 2}},
		{"a cursor past a head is not negative", "", []NodeReport{
			report("a", "follower", 1, 1, map[string]int64{"b": 9}),
			report("b", "follower", 1, 2, map[string]int64{"a": 1}),
		}, []uint64{0, 0}, []int64{0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fillDerived(tt.nodes, tt.leader)
			for i, n := range tt.nodes {
				if n.Lag != tt.wantLag[i] || n.ExchangeBehind != tt.wantBehind[i] {
					t.Errorf("%s: lag %d behind %d, want %d and %d", n.Node, n.Lag, n.ExchangeBehind, tt.wantLag[i], tt.wantBehind[i])
				}
			}
		})
	}
}
