package raft

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
)

// countingMachine applies in constant time so the benchmarks measure raft,
// bolt and the fsync, not the state machine.
type countingMachine struct{ listMachine }

func (m *countingMachine) Apply(index uint64, data []byte) any {
	m.mu.Lock()
	m.applies++
	m.mu.Unlock()
	return nil
}

var benchPayload = make([]byte, 128)

func BenchmarkProposeSingleNode(b *testing.B) {
	s := openLeader(b, fastConfig("bench", b.TempDir()), &countingMachine{})
	ctx := context.Background()
	b.SetBytes(int64(len(benchPayload)))
	for b.Loop() {
		if _, _, err := s.Propose(ctx, benchPayload); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkProposeSingleNodeParallel(b *testing.B) {
	s := openLeader(b, fastConfig("bench", b.TempDir()), &countingMachine{})
	ctx := context.Background()
	b.SetBytes(int64(len(benchPayload)))
	b.SetParallelism(16) // many sessions proposing at once share log writes
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := s.Propose(ctx, benchPayload); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkProposeInMemoryParallel(b *testing.B) {
	s := openLeader(b, memoryConfig("bench"), &countingMachine{})
	ctx := context.Background()
	b.SetBytes(int64(len(benchPayload)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := s.Propose(ctx, benchPayload); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkForwardedPropose measures a proposal made on a follower of a
// 3-node in-memory cluster: forward to the leader, commit on a quorum, and
// wait for the follower's own state machine to apply it.
func BenchmarkForwardedPropose(b *testing.B) {
	c := startCluster(b, 3)
	leader := c.waitLeader()
	var follower *testNode
	for _, n := range c.live() {
		if n != leader {
			follower = n
			break
		}
	}
	ctx := context.Background()
	var seq atomic.Int64
	b.ResetTimer()
	for b.Loop() {
		data := fmt.Appendf(nil, "rid-%d|x", seq.Add(1))
		if _, _, err := follower.store.Propose(ctx, data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkForwardedProposeParallel is the same with many proposers at
// once, as many sessions on one node would be.
func BenchmarkForwardedProposeParallel(b *testing.B) {
	c := startCluster(b, 3)
	leader := c.waitLeader()
	var follower *testNode
	for _, n := range c.live() {
		if n != leader {
			follower = n
			break
		}
	}
	ctx := context.Background()
	var seq atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			data := fmt.Appendf(nil, "rid-%d|x", seq.Add(1))
			if _, _, err := follower.store.Propose(ctx, data); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
