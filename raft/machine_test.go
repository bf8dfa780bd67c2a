package raft

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
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

// dedupMachine is the test StateMachine for clusters. An entry is
// "requestID|payload"; like raft/fsm it applies a request id once and
// answers a repeat with the recorded response (the 1-based position of the
// payload in the list), so retried proposals are safe.
type dedupMachine struct {
	mu    sync.Mutex
	state dedupState
	// applies counts Apply calls per request id, repeats included.
	applies map[string]int
}

type dedupState struct {
	Items     []string       `json:"items"`
	Responses map[string]int `json:"responses"`
}

func newDedupMachine() *dedupMachine {
	return &dedupMachine{state: dedupState{Responses: map[string]int{}}, applies: map[string]int{}}
}

func (m *dedupMachine) Apply(index uint64, data []byte) any {
	rid, payload, _ := strings.Cut(string(data), "|")
	m.mu.Lock()
	defer m.mu.Unlock()
	m.applies[rid]++
	if resp, ok := m.state.Responses[rid]; ok {
		return resp
	}
	m.state.Items = append(m.state.Items, payload)
	m.state.Responses[rid] = len(m.state.Items)
	return len(m.state.Items)
}

func (m *dedupMachine) Snapshot() (io.WriterTo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	data, err := json.Marshal(m.state)
	if err != nil {
		return nil, err
	}
	return bytes.NewReader(data), nil
}

func (m *dedupMachine) Restore(r io.Reader) error {
	state := dedupState{Responses: map[string]int{}}
	if err := json.NewDecoder(r).Decode(&state); err != nil {
		return fmt.Errorf("decode dedup snapshot: %w", err)
	}
	m.mu.Lock()
	m.state = state
	m.mu.Unlock()
	return nil
}

func (m *dedupMachine) items() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.state.Items)
}

func (m *dedupMachine) appliesOf(rid string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.applies[rid]
}
