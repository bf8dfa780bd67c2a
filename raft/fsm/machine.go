package fsm

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
)

// Observer receives the events of each applied command that had any, with the command's log
// index, in log order, after the state lock is released. It runs on Raft's apply path (on the
// leader and on every follower), so it must return quickly: the node hands the events to its
// Applied stream (node/stream), whose subscribers handle them on their own goroutines. It may
// block briefly to apply back-pressure, never drop or reorder.
type Observer func(index uint64, events []Event)

// RestoreObserver is told that the state was replaced by a snapshot at index: the events of the
// entries the snapshot covers are never observed, so whoever keeps a view derived from events
// rebuilds it from the state.
type RestoreObserver func(index uint64)

// Machine is the replicated state machine. It implements the StateMachine interface of package raft.
type Machine struct {
	// lock tier 3: readers hold it for their callback; Apply holds it and takes nothing
	mu        sync.RWMutex
	state     *State
	observer  Observer
	onRestore RestoreObserver
	logger    *slog.Logger
}

// New returns a machine with an empty state.
func New(logger *slog.Logger) *Machine {
	if logger == nil {
		logger = slog.Default()
	}
	return &Machine{state: NewState(), logger: logger}
}

// SetObserver installs the event observer. Call it before the machine receives entries.
func (m *Machine) SetObserver(o Observer) {
	m.mu.Lock()
	m.observer = o
	m.mu.Unlock()
}

// SetRestoreObserver installs the hook told about snapshot restores. Call it before the machine
// receives entries.
func (m *Machine) SetRestoreObserver(o RestoreObserver) {
	m.mu.Lock()
	m.onRestore = o
	m.mu.Unlock()
}

// SetLocalNode names the node this machine runs on (the Node of its sessions), for
// State.LocalMembers. Call it before the machine receives entries.
func (m *Machine) SetLocalNode(node string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state.node = node
	m.state.rebuildLocal()
}

// Read runs f with the state under a read lock. f must not retain references into the state.
func (m *Machine) Read(f func(*State)) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	f(m.state)
}

// Apply applies one log entry and returns its Result. An entry that does not decode is answered
// ErrInvalid and changes nothing. An entry of a command type this build does not know stops the
// node (it panics), unless the entry is marked ignorable: the node that wrote it runs a newer
// version, and applying the log without it would make this replica silently diverge from theirs.
func (m *Machine) Apply(index uint64, data []byte) any {
	cmd, env, ignorable, err := Decode(data)
	if err != nil {
		m.mu.Lock()
		m.state.index = index
		m.mu.Unlock()
		if errors.Is(err, ErrUnknownCommand) {
			if ignorable {
				m.logger.Warn("skipping unknown ignorable command", "index", index, "err", err)
				return Result{Code: NoChange}
			}
			m.logger.Error("log entry of an unknown command type: upgrade this node", "index", index, "err", err)
			panic(fmt.Sprintf("fsm: log entry %d: %v; this build cannot apply it without diverging from the nodes that can: upgrade it", index, err))
		}
		m.logger.Error("undecodable log entry", "index", index, "err", err)
		return Result{Code: ErrInvalid}
	}
	m.mu.Lock()
	st := m.state
	st.index = index
	if env.RequestID != "" {
		if r, ok := st.requests[env.RequestID]; ok {
			m.mu.Unlock()
			return r
		}
	}
	a := Applier{st: st, env: env, index: index}
	res := commands[cmd.CommandType()].apply(&a, cmd)
	if env.RequestID != "" {
		st.remember(env.RequestID, res)
	}
	obs := m.observer
	m.mu.Unlock()
	if obs != nil && len(a.events) > 0 {
		obs(index, a.events)
	}
	return res
}

func (s *State) remember(rid string, r Result) {
	s.requests[rid] = r
	s.requestOrder = append(s.requestOrder, rid)
	if len(s.requestOrder) > requestMemory {
		drop := len(s.requestOrder) - requestMemory
		for _, old := range s.requestOrder[:drop] {
			delete(s.requests, old)
		}
		// Shift in place: reallocating the whole order on every apply made steady-state Apply
		// allocation-bound.
		n := copy(s.requestOrder, s.requestOrder[drop:])
		clear(s.requestOrder[n:])
		s.requestOrder = s.requestOrder[:n]
	}
}

// Snapshot encodes the state now; the returned writer holds a private copy.
func (m *Machine) Snapshot() (io.WriterTo, error) {
	m.mu.RLock()
	data, err := m.state.encode()
	m.mu.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return bytes.NewReader(data), nil
}

// Restore replaces the state with a snapshot's.
func (m *Machine) Restore(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	st := NewState()
	if err := st.decode(data); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	m.mu.Lock()
	st.node = m.state.node
	st.localVersion = m.state.localVersion // normalize moves it on: it never repeats
	st.normalize()
	m.state = st
	hook := m.onRestore
	m.mu.Unlock()
	if hook != nil {
		hook(st.index)
	}
	return nil
}

// Hash is the SHA-256 of the canonical state encoding; equal states give equal hashes.
func (m *Machine) Hash() [32]byte {
	_, h := m.IndexedHash()
	return h
}

// IndexedHash is Hash together with the index of the last entry applied to the state it hashed.
// It encodes the whole state under the read lock, holding Apply back meanwhile: call it on
// demand (a harness comparing replicas), never periodically.
func (m *Machine) IndexedHash() (uint64, [32]byte) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	data, err := m.state.encode()
	if err != nil { // cannot happen for these types; make it visible rather than silent
		panic(fmt.Sprintf("fsm: hash encode: %v", err))
	}
	return m.state.index, sha256.Sum256(data)
}

// Applier applies one command to st and collects events.
type Applier struct {
	st     *State
	env    Envelope
	index  uint64
	events []Event
}

func (a *Applier) emit(e Event) {
	e.Index = a.index
	e.Time = a.env.Time
	a.events = append(a.events, e)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
