// Package fsmtest builds replicated states for tests outside raft/fsm and in its modules: a
// Machine driven through encoded log entries, as Raft would drive it, so fixtures hold only states
// Apply can reach. A test applies a module's commands by importing the module, which registers it.
package fsmtest

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// Node is the node name fixtures register local sessions under.
const Node = "node-test"

// Base is the time stamped on the first entry (unix ms); each later entry is one second on.
const Base = int64(1_700_000_000_000)

// Machine is an fsm.Machine fed one entry per Apply call. It is safe for concurrent use: readers
// may call Read while a test applies.
type Machine struct {
	*fsm.Machine
	// lock tier 2: held over an Apply (which takes the machine's lock)
	mu    sync.Mutex
	index uint64
}

// New returns an empty machine whose local node is Node.
func New() *Machine {
	m := fsm.New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	m.SetLocalNode(Node)
	return &Machine{Machine: m}
}

// Apply applies cmd as the next log entry, stamped Base plus one second per entry, and returns
// its result.
func (m *Machine) Apply(cmd fsm.Command) (fsm.Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.index++
	data, err := fsm.Encode(cmd, "rid-"+strconv.FormatUint(m.index, 10), Node, Base+int64(m.index)*1000)
	if err != nil {
		return fsm.Result{}, fmt.Errorf("fsmtest: %w", err)
	}
	res, ok := m.Machine.Apply(m.index, data).(fsm.Result)
	if !ok {
		return fsm.Result{}, fmt.Errorf("fsmtest: entry %d: Apply returned no Result", m.index)
	}
	return res, nil
}

// MustOK applies each command and fails tb unless every one answers fsm.OK.
func (m *Machine) MustOK(tb testing.TB, cmds ...fsm.Command) {
	tb.Helper()
	for _, c := range cmds {
		res, err := m.Apply(c)
		if err != nil {
			tb.Fatal(err)
		}
		if res.Code != fsm.OK {
			tb.Fatalf("%T %+v: code %v, want ok", c, c, res.Code)
		}
	}
}

// Session is a RegisterSession of a local session with the fields Apply requires filled in.
func Session(id, nick, did string) fsm.RegisterSession {
	return fsm.RegisterSession{ID: id, Node: Node, Incarnation: "inc-test", Nick: nick, User: "u", Host: "host.test", DID: did}
}

// Now is the time stamped on the last entry applied (unix ms).
func (m *Machine) Now() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Base + int64(m.index)*1000
}

// Snapshot is m's snapshot, as Raft would store it.
func Snapshot(tb testing.TB, m *fsm.Machine) []byte {
	tb.Helper()
	w, err := m.Snapshot()
	if err != nil {
		tb.Fatalf("snapshot: %v", err)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		tb.Fatalf("write snapshot: %v", err)
	}
	return buf.Bytes()
}

// Restored is a fresh machine restored from m's snapshot; it fails tb unless the two hash alike.
func Restored(tb testing.TB, m *fsm.Machine) *fsm.Machine {
	tb.Helper()
	fresh := fsm.New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := fresh.Restore(bytes.NewReader(Snapshot(tb, m))); err != nil {
		tb.Fatal(err)
	}
	if fresh.Hash() != m.Hash() {
		tb.Fatal("restored state hashes differently")
	}
	return fresh
}

// Harness is a Machine bound to a test: its helpers fail the test on what is not the test's
// question (an entry that does not encode, a setup command refused).
type Harness struct {
	*Machine
	tb testing.TB
}

// NewHarness returns a harness over an empty machine.
func NewHarness(tb testing.TB) *Harness { return &Harness{New(), tb} }

// Do applies cmd as the next entry and returns its result.
func (h *Harness) Do(cmd fsm.Command) fsm.Result {
	h.tb.Helper()
	res, err := h.Apply(cmd)
	if err != nil {
		h.tb.Fatal(err)
	}
	return res
}

// OK applies each command and fails the test unless every one answers fsm.OK.
func (h *Harness) OK(cmds ...fsm.Command) {
	h.tb.Helper()
	h.MustOK(h.tb, cmds...)
}

// World is the sessions many tables start from, on Node: alice (alice's DID), bob (bob's),
// guest (no DID) and oper (a server operator without a DID).
func World(alice, bob string) []fsm.Command {
	oper := Session("s-oper", "oper", "")
	oper.Oper = true
	return []fsm.Command{Session("s-alice", "alice", alice), Session("s-bob", "bob", bob), Session("s-guest", "guest", ""), oper}
}
