package fsmtest

import (
	"bytes"
	"encoding/json"
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
// question (an entry that does not encode, a setup command refused). It keeps the events applied.
type Harness struct {
	*Machine
	tb     testing.TB
	events []fsm.Event // guarded by the machine's apply: observed during Apply
}

// NewHarness returns a harness over an empty machine.
func NewHarness(tb testing.TB) *Harness {
	h := &Harness{Machine: New(), tb: tb}
	h.SetObserver(func(_ uint64, evs []fsm.Event) { h.events = append(h.events, evs...) })
	return h
}

// TakeEvents returns and forgets the events applied so far.
func (h *Harness) TakeEvents() []fsm.Event {
	evs := h.events
	h.events = nil
	return evs
}

// Case is one row of an Apply table: setup commands that must answer fsm.OK, then cmd, whose
// result must encode as want does and whose events must be of the kinds events lists; check, when
// set, then reads the state (at is the time stamped on cmd).
type Case struct {
	Name   string
	Setup  []fsm.Command
	Cmd    fsm.Command
	Want   fsm.Result
	Events []fsm.EventKind
	Check  func(t *testing.T, st *fsm.State, at int64)
}

// RunCases runs each case on a fresh harness, as a subtest.
func RunCases(t *testing.T, cases []Case) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			h := NewHarness(t)
			h.OK(tc.Setup...)
			h.TakeEvents()
			got := h.Do(tc.Cmd)
			at := h.Now()
			if g, w := jsonOf(t, got), jsonOf(t, tc.Want); g != w {
				t.Errorf("result\n got %s\nwant %s", g, w)
			}
			var kinds []fsm.EventKind
			for _, e := range h.TakeEvents() {
				kinds = append(kinds, e.Kind)
				if e.Time != at {
					t.Errorf("event %v stamped time %d, want %d", e.Kind, e.Time, at)
				}
			}
			if g, w := jsonOf(t, kinds), jsonOf(t, tc.Events); g != w {
				t.Errorf("event kinds %v, want %v", kinds, tc.Events)
			}
			if tc.Check != nil {
				h.Read(func(st *fsm.State) { tc.Check(t, st, at) })
			}
		})
	}
}

// With returns base followed by more, without aliasing base.
func With(base []fsm.Command, more ...fsm.Command) []fsm.Command {
	out := make([]fsm.Command, 0, len(base)+len(more))
	return append(append(out, base...), more...)
}

func jsonOf(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

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

// CheckSampled fails tb for each command type of m that none of samples is of: a module's golden
// encoding test covers every type it registers.
func CheckSampled(tb testing.TB, samples []fsm.Command, m fsm.Module) {
	tb.Helper()
	seen := map[fsm.CommandType]bool{}
	for _, cmd := range samples {
		seen[cmd.CommandType()] = true
	}
	for typ := range m.Commands {
		if !seen[typ] {
			tb.Errorf("command type %d has no sample", typ)
		}
	}
}
