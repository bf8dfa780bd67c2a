package raft

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
)

// listMachine is the test StateMachine: an append-only list of entries with
// a JSON snapshot. It also counts calls and flags out-of-order indexes.
type listMachine struct {
	mu         sync.Mutex
	state      listState
	applies    int
	restores   int
	outOfOrder error
}

type listState struct {
	Items   []string `json:"items"`
	Indexes []uint64 `json:"indexes"`
}

func (m *listMachine) Apply(index uint64, data []byte) any {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := len(m.state.Indexes); n > 0 && index <= m.state.Indexes[n-1] && m.outOfOrder == nil {
		m.outOfOrder = fmt.Errorf("index %d applied after %d", index, m.state.Indexes[n-1])
	}
	m.state.Items = append(m.state.Items, string(data))
	m.state.Indexes = append(m.state.Indexes, index)
	m.applies++
	return len(m.state.Items)
}

func (m *listMachine) Snapshot() (io.WriterTo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return jsonSnapshot{state: listState{
		Items:   slices.Clone(m.state.Items),
		Indexes: slices.Clone(m.state.Indexes),
	}}, nil
}

func (m *listMachine) Restore(r io.Reader) error {
	var state listState
	if err := json.NewDecoder(r).Decode(&state); err != nil {
		return fmt.Errorf("decode list snapshot: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state = state
	m.restores++
	return nil
}

func (m *listMachine) items() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.state.Items)
}

func (m *listMachine) counts() (applies, restores int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.applies, m.restores
}

func (m *listMachine) orderError() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.outOfOrder
}

type jsonSnapshot struct{ state listState }

func (s jsonSnapshot) WriteTo(w io.Writer) (int64, error) {
	data, err := json.Marshal(s.state)
	if err != nil {
		return 0, err
	}
	n, err := w.Write(data)
	return int64(n), err
}
