package fsm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"testing"
)

// Test identities shared by the Apply tables.
const (
	didAlice = "did:plc:alice"
	didBob   = "did:plc:bob"
	didCarol = "did:plc:carol"
	timeBase = int64(1_700_000_000_000)
)

// harness drives a Machine through encoded log entries, as Raft would.
type harness struct {
	tb     testing.TB
	m      *Machine
	index  uint64
	events []Event
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newHarness(tb testing.TB) *harness {
	tb.Helper()
	h := &harness{tb: tb, m: New(quietLogger())}
	h.m.SetObserver(func(_ uint64, evs []Event) { h.events = append(h.events, evs...) })
	return h
}

// entry encodes cmd for the next index with a fresh request id.
func (h *harness) entry(cmd Command) []byte {
	h.tb.Helper()
	return mustEncode(h.tb, cmd, "rid-"+strconv.FormatUint(h.index+1, 10), "node-a", h.timeAt(h.index+1))
}

func (h *harness) timeAt(index uint64) int64 { return timeBase + int64(index)*1000 }

// apply applies cmd as the next log entry and returns its Result.
func (h *harness) apply(cmd Command) Result {
	h.tb.Helper()
	return h.applyRaw(h.entry(cmd))
}

// applyRaw applies an already encoded entry at the next index.
func (h *harness) applyRaw(data []byte) Result {
	h.tb.Helper()
	h.index++
	out := h.m.Apply(h.index, data)
	res, ok := out.(Result)
	if !ok {
		h.tb.Fatalf("Apply returned %T, want Result", out)
	}
	return res
}

// mustOK applies each command and fails the test unless it returns OK.
func (h *harness) mustOK(cmds ...Command) {
	h.tb.Helper()
	for _, c := range cmds {
		if r := h.apply(c); r.Code != OK {
			h.tb.Fatalf("setup %T %+v: code %v, want ok", c, c, r.Code)
		}
	}
}

// read runs f under the machine's read lock.
func (h *harness) read(f func(st *State)) {
	h.tb.Helper()
	h.m.Read(f)
}

// takeEvents returns and clears the events observed so far.
func (h *harness) takeEvents() []Event {
	evs := h.events
	h.events = nil
	return evs
}

// stateJSON is the canonical encoding of the state without the applied index, so that two states
// can be compared regardless of how many entries were applied.
func stateJSON(tb testing.TB, m *Machine) string {
	tb.Helper()
	var out []byte
	m.Read(func(st *State) {
		saved := st.index
		st.index = 0
		var err error
		out, err = st.encode()
		st.index = saved
		if err != nil {
			tb.Fatalf("marshal state: %v", err)
		}
	})
	return string(out)
}

func mustEncode(tb testing.TB, cmd Command, rid, node string, ts int64) []byte {
	tb.Helper()
	data, err := Encode(cmd, rid, node, ts)
	if err != nil {
		tb.Fatalf("encode %T: %v", cmd, err)
	}
	return data
}

// restoredCopy restores a fresh machine from snap, m's snapshot, and checks it hashes as m does.
func restoredCopy(tb testing.TB, m *Machine, snap []byte) *Machine {
	tb.Helper()
	fresh := New(quietLogger())
	if err := fresh.Restore(bytes.NewReader(snap)); err != nil {
		tb.Fatal(err)
	}
	if fresh.Hash() != m.Hash() {
		tb.Fatal("restored state hashes differently")
	}
	return fresh
}

func snapshotBytes(tb testing.TB, m *Machine) []byte {
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

func jsonString(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatalf("marshal %T: %v", v, err)
	}
	return string(b)
}

// sameJSON compares two values by their JSON encoding, which treats nil and empty alike.
func sameJSON(tb testing.TB, got, want any) bool {
	tb.Helper()
	return jsonString(tb, got) == jsonString(tb, want)
}

// reg builds a RegisterSession on node-a with the usual user and host.
func reg(id, nick, did string) RegisterSession {
	return RegisterSession{ID: id, Node: "node-a", Incarnation: "inc-1", Nick: nick, User: "u" + id,
		Host: "host-" + id, Realname: "Real " + nick, DID: did}
}

// world registers the sessions most tables start from:
// alice (did:plc:alice, token tok-alice), bob (did:plc:bob), guest (no DID), oper (server operator).
func world() []Command {
	alice := reg("s-alice", "alice", didAlice)
	alice.TokenHash = "tok-alice"
	oper := reg("s-oper", "oper", "")
	oper.Oper = true
	return []Command{alice, reg("s-bob", "bob", didBob), reg("s-guest", "guest", ""), oper}
}

// checkInvariants verifies the cross-references Apply must keep consistent.
func checkInvariants(st *State) error {
	if err := checkLocalIndex(st); err != nil {
		return err
	}
	for nick, id := range st.nicks {
		se := st.sessions[id]
		if se == nil {
			return fmt.Errorf("nick %q points to missing session %q", nick, id)
		}
		if Fold(se.Nick) != nick {
			return fmt.Errorf("nick %q points to session %q whose nick is %q", nick, id, se.Nick)
		}
	}
	for id, se := range st.sessions {
		if se.ID != id {
			return fmt.Errorf("session key %q holds id %q", id, se.ID)
		}
		if st.nicks[Fold(se.Nick)] != id {
			return fmt.Errorf("session %q nick %q is not indexed", id, se.Nick)
		}
		if len(se.channels) > MaxChannelsPerSession {
			return fmt.Errorf("session %q in %d channels", id, len(se.channels))
		}
		for name := range se.channels {
			ch := st.channels[name]
			if ch == nil {
				return fmt.Errorf("session %q lists missing channel %q", id, name)
			}
			if ch.members[id] == nil {
				return fmt.Errorf("session %q lists channel %q that has no such member", id, name)
			}
		}
	}
	owned := map[string]string{}
	for nick, did := range st.nickOwners {
		if other, ok := owned[did]; ok {
			return fmt.Errorf("%s owns two nicks: %q and %q", did, other, nick)
		}
		owned[did] = nick
	}
	recount := map[string]int{}
	for _, ch := range st.channels {
		if ch.FounderDID != "" {
			recount[ch.FounderDID]++
		}
	}
	if len(recount) != len(st.founded) {
		return fmt.Errorf("founded index %v, channels say %v", st.founded, recount)
	}
	for did, n := range recount {
		if st.founded[did] != n {
			return fmt.Errorf("founded index %v, channels say %v", st.founded, recount)
		}
	}
	founded := map[string]int{}
	for name, ch := range st.channels {
		if ch.FounderDID != "" {
			if founded[ch.FounderDID]++; founded[ch.FounderDID] > MaxFoundedPerDID {
				return fmt.Errorf("%s founds more than %d channels", ch.FounderDID, MaxFoundedPerDID)
			}
		}
		if ch.Name != name {
			return fmt.Errorf("channel key %q holds name %q", name, ch.Name)
		}
		if !validChannelName(name) {
			return fmt.Errorf("invalid channel name %q", name)
		}
		if len(ch.members) > 0 && ch.EmptySince != 0 {
			return fmt.Errorf("channel %q has members and an empty-since time", name)
		}
		for id, mem := range ch.members {
			if mem == nil {
				return fmt.Errorf("channel %q member %q is nil", name, id)
			}
			se := st.sessions[id]
			if se == nil {
				return fmt.Errorf("channel %q has member %q that is not a session", name, id)
			}
			if !se.channels[name] {
				return fmt.Errorf("channel %q has member %q whose session does not list it", name, id)
			}
		}
		if len(ch.Bans) > MaxListEntries || len(ch.Exceptions) > MaxListEntries || len(ch.invites) > MaxListEntries ||
			len(ch.Pins) > MaxPins {
			return fmt.Errorf("channel %q lists over the limit", name)
		}
		pinned := map[string]bool{}
		for _, p := range ch.Pins {
			if p.MsgID == "" || pinned[p.MsgID] {
				return fmt.Errorf("channel %q pins %q twice or empty", name, p.MsgID)
			}
			pinned[p.MsgID] = true
		}
	}
	for hash, id := range st.tokens {
		se := st.sessions[id]
		if se == nil || se.TokenHash != hash {
			return fmt.Errorf("token %q points to session %q that does not hold it", hash, id)
		}
	}
	for nick, did := range st.nickOwners {
		if st.didNicks[did] != nick {
			return fmt.Errorf("nick %q owned by %q, but that DID owns %q", nick, did, st.didNicks[did])
		}
	}
	for did, nick := range st.didNicks {
		if st.nickOwners[nick] != did {
			return fmt.Errorf("DID %q owns %q, but that nick is owned by %q", did, nick, st.nickOwners[nick])
		}
	}
	for did, byKID := range st.keys {
		for kid, k := range byKID {
			if k == nil || k.KID != kid || len(k.PublicKey) != 32 || did == "" {
				return fmt.Errorf("key %q/%q malformed: %+v", did, kid, k)
			}
		}
	}
	if len(st.requests) != len(st.requestOrder) || len(st.requestOrder) > requestMemory {
		return fmt.Errorf("request memory: %d results, %d ids", len(st.requests), len(st.requestOrder))
	}
	for _, rid := range st.requestOrder {
		if _, ok := st.requests[rid]; !ok {
			return fmt.Errorf("request %q in order but not remembered", rid)
		}
	}
	return nil
}

// restore replaces the machine's state with st, for cases the command set cannot reach directly.
func (h *harness) restore(st *State) {
	h.tb.Helper()
	data, err := st.encode()
	if err != nil {
		h.tb.Fatalf("marshal state: %v", err)
	}
	if err := h.m.Restore(bytes.NewReader(data)); err != nil {
		h.tb.Fatalf("restore: %v", err)
	}
}

// applyCase is one row of an Apply table: setup commands that must all return OK, the command
// under test, the Result it must return, the kinds of events it must emit, and a state check.
type applyCase struct {
	name   string
	setup  []Command
	cmd    Command
	want   Result // a Member's JoinedAt is checked against the entry time, then ignored
	events []EventKind
	check  func(t *testing.T, st *State, at int64) // at: the time stamped on cmd
}

func runApplyCases(t *testing.T, cases []applyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.mustOK(tc.setup...)
			h.takeEvents()
			at := h.timeAt(h.index + 1)
			got := h.apply(tc.cmd)
			if got.Member != nil {
				if got.Member.JoinedAt != at {
					t.Errorf("member joined at %d, want %d", got.Member.JoinedAt, at)
				}
				m := *got.Member
				m.JoinedAt = 0
				got.Member = &m
			}
			if !sameJSON(t, got, tc.want) {
				t.Errorf("result\n got %s\nwant %s", jsonString(t, got), jsonString(t, tc.want))
			}
			var kinds []EventKind
			for _, e := range h.takeEvents() {
				kinds = append(kinds, e.Kind)
				if e.Index != h.index || e.Time != at {
					t.Errorf("event %v stamped index %d time %d, want %d %d", e.Kind, e.Index, e.Time, h.index, at)
				}
			}
			if !sameJSON(t, kinds, tc.events) {
				t.Errorf("event kinds %v, want %v", kinds, tc.events)
			}
			h.read(func(st *State) {
				if err := checkInvariants(st); err != nil {
					t.Errorf("invariant: %v", err)
				}
				if tc.check != nil {
					tc.check(t, st, at)
				}
			})
		})
	}
}

// with returns base followed by more, without aliasing base.
func with(base []Command, more ...Command) []Command {
	out := make([]Command, 0, len(base)+len(more))
	return append(append(out, base...), more...)
}

// checkLocalIndex checks that the local members index holds exactly the members whose sessions
// are on the machine's node, sharing the channels' Member values.
func checkLocalIndex(st *State) error {
	for name, byID := range st.local {
		ch := st.channels[name]
		if ch == nil {
			return fmt.Errorf("local index keeps deleted channel %s", name)
		}
		for id, m := range byID {
			if ch.members[id] != m {
				return fmt.Errorf("local index of %s has %s, not the channel's member", name, id)
			}
		}
	}
	for name, ch := range st.channels {
		for id, m := range ch.members {
			se := st.sessions[id]
			local := st.node != "" && se != nil && se.Node == st.node
			if got := st.local[name][id]; (got != nil) != local || (local && got != m) {
				return fmt.Errorf("local index of %s: session %s indexed %v, on this node %v", name, id, got != nil, local)
			}
		}
	}
	return nil
}
