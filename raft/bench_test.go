package raft

import (
	"context"
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
