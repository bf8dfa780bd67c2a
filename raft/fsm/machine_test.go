package fsm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestExactlyOnce(t *testing.T) {
	tests := []struct {
		name  string
		setup []Command
		cmd   Command
	}{
		{"register", world(), reg("s-new", "newbie", didCarol)},
		{"join creates", world(), Join{Session: "s-alice", Channel: "#new"}},
		{"part", channelWorld(), Part{Session: "s-bob", Channel: "#c"}},
		{"kick", channelWorld(), Kick{Session: "s-alice", Channel: "#c", Target: "s-guest"}},
		{"mode", channelWorld(), modes("s-alice", "#c", add("i", ""), addTo("o", "s-bob"), add("b", "x!*@*"))},
		{"topic", channelWorld(), Topic{Session: "s-alice", Channel: "#c", Text: "t"}},
		{"invite", aliceOnly(), Invite{Session: "s-alice", Channel: "#c", Target: "s-guest"}},
		{"nick", world(), ChangeNick{Session: "s-guest", Nick: "g2"}},
		{"authenticate", world(), Authenticate{Session: "s-guest", DID: didCarol, TokenHash: "t"}},
		{"end session", channelWorld(), EndSession{Session: "s-guest"}},
		{"purge", world(), PurgeNode{Node: "node-a"}},
		{"away", world(), Away{Session: "s-bob", Text: "x"}},
		{"oper", world(), Oper{Session: "s-bob"}},
		{"favorites", world(), SetFavorites{DID: didAlice, Favorites: []string{"#a"}}},
		{"register key", world(), RegisterKey{DID: didAlice, KID: "k", PublicKey: testKey(1), Source: "server-key"}},
		{"retire key", []Command{RegisterKey{DID: didAlice, KID: "k", PublicKey: testKey(1), Source: "server-key"}}, RetireKey{DID: didAlice, KID: "k"}},
		{"pin", channelWorld(), Pin{Session: "s-alice", Channel: "#c", MsgID: "m1"}},
		{"unpin", with(channelWorld(), Pin{Session: "s-alice", Channel: "#c", MsgID: "m1"}), Unpin{Session: "s-alice", Channel: "#c", MsgID: "m1"}},
		{"refused command", world(), Join{Session: "s-x", Channel: "#c"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.mustOK(tc.setup...)
			entry := mustEncode(t, tc.cmd, "retried-rid", "node-a", 42)
			first := h.applyRaw(entry)
			after := stateJSON(t, h.m)
			h.takeEvents()

			again := h.applyRaw(entry)
			if !sameJSON(t, again, first) {
				t.Errorf("retry result %s, first %s", jsonString(t, again), jsonString(t, first))
			}
			if stateJSON(t, h.m) != after {
				t.Errorf("retry changed the state")
			}
			if evs := h.takeEvents(); len(evs) != 0 {
				t.Errorf("retry emitted %d events", len(evs))
			}
			h.read(func(st *State) {
				if st.index != h.index {
					t.Errorf("index %d, want %d: a retried entry is still applied at its index", st.index, h.index)
				}
			})
		})
	}
}

// TestExactlyOnceByRequestID checks that the request id, not the body, identifies a proposal.
func TestExactlyOnceByRequestID(t *testing.T) {
	h := newHarness(t)
	h.mustOK(world()...)
	first := h.applyRaw(mustEncode(t, Away{Session: "s-bob", Text: "one"}, "rid-x", "node-a", 1))
	second := h.applyRaw(mustEncode(t, Away{Session: "s-bob", Text: "two"}, "rid-x", "node-b", 2))
	if first.Code != OK || second.Code != OK {
		t.Fatalf("results %v %v", first.Code, second.Code)
	}
	h.read(func(st *State) {
		if st.sessions["s-bob"].Away != "one" {
			t.Errorf("second proposal with the same id applied: away %q", st.sessions["s-bob"].Away)
		}
	})
}

func TestEmptyRequestIDIsNotRemembered(t *testing.T) {
	h := newHarness(t)
	entry := mustEncode(t, reg("s1", "n1", ""), "", "node-a", 1)
	if r := h.applyRaw(entry); r.Code != OK {
		t.Fatalf("first: %v", r.Code)
	}
	if r := h.applyRaw(entry); r.Code != ErrAlreadyRegistered {
		t.Errorf("second: %v, want already-registered", r.Code)
	}
	h.read(func(st *State) {
		if len(st.requests) != 0 || len(st.requestOrder) != 0 {
			t.Errorf("empty request id remembered")
		}
	})
}

func TestRequestMemoryBounded(t *testing.T) {
	h := newHarness(t)
	rid := func(i int) string { return fmt.Sprintf("rid-%05d", i) }
	first := mustEncode(t, reg("s1", "n1", ""), rid(0), "node-a", 1)
	if r := h.applyRaw(first); r.Code != OK {
		t.Fatalf("register: %v", r.Code)
	}
	for i := 1; i <= requestMemory; i++ {
		h.applyRaw(mustEncode(t, Away{Session: "s1", Text: fmt.Sprint(i)}, rid(i), "node-a", int64(i)))
	}
	h.read(func(st *State) {
		if len(st.requests) != requestMemory || len(st.requestOrder) != requestMemory {
			t.Fatalf("remembered %d/%d, want %d", len(st.requests), len(st.requestOrder), requestMemory)
		}
		if _, ok := st.requests[rid(0)]; ok {
			t.Errorf("oldest request still remembered")
		}
		if st.requestOrder[0] != rid(1) || st.requestOrder[requestMemory-1] != rid(requestMemory) {
			t.Errorf("order from %s to %s", st.requestOrder[0], st.requestOrder[requestMemory-1])
		}
	})
	// The forgotten request is applied again; the oldest remembered one is not.
	if r := h.applyRaw(first); r.Code != ErrAlreadyRegistered {
		t.Errorf("forgotten request: %v, want already-registered", r.Code)
	}
	if r := h.applyRaw(mustEncode(t, Away{Session: "s1", Text: "1"}, rid(2), "node-a", 0)); r.Code != OK {
		t.Errorf("remembered request: %v, want its recorded ok", r.Code)
	}
	h.read(func(st *State) {
		if st.sessions["s1"].Away != fmt.Sprint(requestMemory) {
			t.Errorf("away %q: a remembered request was applied again", st.sessions["s1"].Away)
		}
		if err := checkInvariants(st); err != nil {
			t.Error(err)
		}
	})
}

func TestEventsInOrder(t *testing.T) {
	h := newHarness(t)
	cmds := []Command{
		reg("s1", "one", didAlice), reg("s2", "two", ""),
		Join{Session: "s1", Channel: "#c"}, Join{Session: "s2", Channel: "#c"},
		ChangeNick{Session: "s2", Nick: "deux"},
		Authenticate{Session: "s2", DID: didBob, TokenHash: "t2"},
		Topic{Session: "s1", Channel: "#c", Text: "hi"},
		modes("s1", "#c", addTo("v", "s2")),
		Invite{Session: "s1", Channel: "#c", Target: "s2"}, // refused: already on the channel
		Away{Session: "s2", Text: "afk"},
		Oper{Session: "s2"},
		Kick{Session: "s1", Channel: "#c", Target: "s2", Reason: "k"},
		Join{Session: "s2", Channel: "#c"},
		Part{Session: "s2", Channel: "#c", Reason: "p"},
		EndSession{Session: "s1", Reason: "q"},
	}
	want := []struct {
		kind  EventKind
		index uint64
		actor string
	}{
		{EvRegister, 1, "s1"}, {EvRegister, 2, "s2"}, {EvJoin, 3, "s1"}, {EvJoin, 4, "s2"}, {EvNick, 5, "s2"}, {EvAccount, 6, "s2"}, {EvTopic, 7, "s1"},
		{EvMode, 8, "s1"}, {EvAway, 10, "s2"}, {EvOper, 11, "s2"}, {EvKick, 12, "s1"}, {EvJoin, 13, "s2"},
		{EvPart, 14, "s2"}, {EvQuit, 15, "s1"},
	}
	for _, c := range cmds {
		h.apply(c)
	}
	got := h.takeEvents()
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		e := got[i]
		if e.Kind != w.kind || e.Index != w.index || e.Actor.ID != w.actor || e.Time != h.timeAt(w.index) {
			t.Errorf("event %d: %v index %d actor %s time %d, want %v %d %s %d", i, e.Kind, e.Index, e.Actor.ID, e.Time,
				w.kind, w.index, w.actor, h.timeAt(w.index))
		}
	}
	if e := got[5]; e.Actor.DID != didBob || e.Actor.Nick != "deux" || !sameJSON(t, e.Channels, []string{"#c"}) {
		t.Errorf("account event %+v", e)
	}
	if e := got[6]; e.Text != "hi" || e.Channel != "#c" {
		t.Errorf("topic event %+v", e)
	}
	if e := got[8]; e.Text != "afk" || !sameJSON(t, e.Channels, []string{"#c"}) {
		t.Errorf("away event %+v", e)
	}
	if e := got[12]; e.Text != "p" || e.Channel != "#c" {
		t.Errorf("part event %+v", e)
	}
	if e := got[13]; e.Text != "q" || !sameJSON(t, e.Channels, []string{"#c"}) || e.Actor.Nick != "one" {
		t.Errorf("quit event %+v", e)
	}
}

func TestInviteEvent(t *testing.T) {
	h := newHarness(t)
	h.mustOK(aliceOnly()...)
	h.takeEvents()
	h.mustOK(Invite{Session: "s-alice", Channel: "#c", Target: "s-bob"})
	evs := h.takeEvents()
	if len(evs) != 1 || evs[0].Kind != EvInvite || evs[0].Target.ID != "s-bob" || evs[0].Target.DID != didBob || evs[0].Channel != "#c" {
		t.Errorf("events %+v", evs)
	}
}

// TestObserverRunsWithoutLock proves events are delivered after the state lock is released: the
// observer reads the state, takes a snapshot and hashes it, which would deadlock under the lock.
func TestObserverRunsWithoutLock(t *testing.T) {
	m := New(quietLogger())
	type seen struct {
		kind    EventKind
		members int
	}
	var got []seen
	m.SetObserver(func(_ uint64, evs []Event) {
		for _, e := range evs {
			n := -1
			m.Read(func(st *State) {
				if c := st.channels[e.Channel]; c != nil {
					n = len(c.members)
				}
			})
			if _, err := m.Snapshot(); err != nil {
				t.Errorf("snapshot in observer: %v", err)
			}
			m.Hash()
			got = append(got, seen{e.Kind, n})
		}
	})
	var entries [][]byte
	for i, c := range []Command{reg("s1", "one", ""), reg("s2", "two", ""), Join{Session: "s1", Channel: "#c"},
		Join{Session: "s2", Channel: "#c"}, Part{Session: "s1", Channel: "#c"}} {
		entries = append(entries, mustEncode(t, c, fmt.Sprint(i), "n", 1))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i, e := range entries {
			m.Apply(uint64(i+1), e)
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Apply did not return: the observer runs under the state lock")
	}
	want := []seen{{EvRegister, -1}, {EvRegister, -1}, {EvJoin, 1}, {EvJoin, 2}, {EvPart, 1}}
	if !sameJSON(t, got, want) {
		t.Errorf("observer saw %+v, want %+v", got, want)
	}
}

func TestNoObserver(t *testing.T) {
	m := New(nil)
	if r := m.Apply(1, mustEncode(t, reg("s1", "one", ""), "r", "n", 1)).(Result); r.Code != OK {
		t.Fatalf("register: %v", r.Code)
	}
	if r := m.Apply(2, mustEncode(t, Join{Session: "s1", Channel: "#c"}, "r2", "n", 1)).(Result); r.Code != OK {
		t.Fatalf("join: %v", r.Code)
	}
}

// richLog builds a state that touches every part of State.
func richLog() []Command {
	return with(channelWorld(),
		modes("s-alice", "#c", add("i", ""), add("k", "key"), add("m", ""), add("E", ""), addTo("o", "s-bob"),
			addTo("h", "s-guest"), addTo("v", "s-guest"), add("b", "x!*@*"), add("b", didCarol), add("I", "y!*@*")),
		Topic{Session: "s-alice", Channel: "#c", Text: "topic"},
		Pin{Session: "s-alice", Channel: "#c", MsgID: "m1"},
		Invite{Session: "s-alice", Channel: "#c", Target: "s-oper"},
		Join{Session: "s-guest", Channel: "#guest"},
		Join{Session: "s-alice", Channel: "#empty"}, Part{Session: "s-alice", Channel: "#empty"},
		Away{Session: "s-bob", Text: "away"},
		SetFavorites{DID: didAlice, Favorites: []string{"#c", "#guest"}},
		RegisterKey{DID: didAlice, KID: "k1", PublicKey: testKey(7), Source: "local-session", ExpiresAt: 1_900_000_000},
		RegisterKey{DID: didAlice, KID: "k2", PublicKey: testKey(8), Source: "server-key"}, RetireKey{DID: didAlice, KID: "k2"},
		reg("s-gone", "gone", didCarol), EndSession{Session: "s-gone"},
	)
}

func TestSnapshotRestoreRoundTrip(t *testing.T) {
	src := newHarness(t)
	src.mustOK(richLog()...)
	snap := snapshotBytes(t, src.m)

	dst := newHarness(t)
	if err := dst.m.Restore(bytes.NewReader(snap)); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if src.m.Hash() != dst.m.Hash() {
		t.Fatalf("hash differs after restore")
	}
	if stateJSON(t, src.m) != stateJSON(t, dst.m) {
		t.Fatalf("state differs after restore")
	}
	if got := snapshotBytes(t, dst.m); !bytes.Equal(got, snap) {
		t.Errorf("snapshot of the restored state differs")
	}
	dst.read(func(st *State) {
		if err := checkInvariants(st); err != nil {
			t.Error(err)
		}
		c := st.channels["#c"]
		if st.index != src.index || c.Key != "key" || !c.didOps[didBob] || len(c.Bans) != 2 || len(c.Exceptions) != 1 ||
			c.Topic != "topic" || len(c.invites) != 1 || len(c.Pins) != 1 || st.channels["#empty"] == nil || st.nickOwners["gone"] != didCarol ||
			st.favorites[didAlice][1] != "#guest" || !c.members["s-guest"].HalfOp || len(st.requests) != int(src.index) ||
			st.key(didAlice, "k1") == nil || string(st.key(didAlice, "k1").PublicKey) != string(testKey(7)) ||
			st.key(didAlice, "k2").RemovedAt == 0 {
			t.Errorf("restored state lost something: %+v", c)
		}
	})
	// Both machines behave the same from here on, including exactly-once for remembered requests.
	dst.index = src.index
	more := []Command{
		Part{Session: "s-bob", Channel: "#c"}, Join{Session: "s-bob", Channel: "#c"}, EndSession{Session: "s-alice"},
		reg("s-new", "new", ""), Join{Session: "s-new", Channel: "#c"},
	}
	for _, c := range more {
		a, b := src.apply(c), dst.apply(c)
		if !sameJSON(t, a, b) {
			t.Errorf("%T: %+v vs %+v", c, a, b)
		}
	}
	if src.m.Hash() != dst.m.Hash() {
		t.Errorf("hash differs after applying the same commands")
	}
	retried := mustEncode(t, richLog()[0], "rid-1", "node-a", 0)
	if r := dst.m.Apply(dst.index+1, retried).(Result); r.Code != OK {
		t.Errorf("remembered request after restore: %v, want its recorded ok", r.Code)
	}
}

func TestRestoreReplaces(t *testing.T) {
	src := newHarness(t)
	src.mustOK(reg("s-src", "src", ""), Join{Session: "s-src", Channel: "#src"})
	dst := newHarness(t)
	dst.mustOK(richLog()...)
	if err := dst.m.Restore(bytes.NewReader(snapshotBytes(t, src.m))); err != nil {
		t.Fatal(err)
	}
	if dst.m.Hash() != src.m.Hash() {
		t.Errorf("restore merged instead of replacing")
	}
	dst.read(func(st *State) {
		if len(st.sessions) != 1 || st.sessions["s-alice"] != nil || st.channels["#c"] != nil || len(st.favorites) != 0 || len(st.keys) != 0 ||
			len(st.nickOwners) != 0 || len(st.tokens) != 0 || len(st.requests) != 2 {
			t.Errorf("old state survived the restore: %d sessions", len(st.sessions))
		}
	})
}

func TestSnapshotIsPrivateCopy(t *testing.T) {
	h := newHarness(t)
	h.mustOK(world()...)
	w, err := h.m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	h.mustOK(reg("s-late", "late", ""))
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "s-late") {
		t.Errorf("snapshot sees a later change")
	}
}

func TestRestoreErrors(t *testing.T) {
	h := newHarness(t)
	h.mustOK(world()...)
	before := h.m.Hash()
	for _, in := range []string{"", "{", "[]", `{"sessions":5}`, `{"index":"x"}`} {
		if err := h.m.Restore(strings.NewReader(in)); err == nil {
			t.Errorf("Restore(%q) succeeded", in)
		}
	}
	if h.m.Hash() != before {
		t.Errorf("failed restore changed the state")
	}
}

// TestRestoreNormalizes checks that a snapshot with missing or null maps still takes commands.
func TestRestoreNormalizes(t *testing.T) {
	basic := []Command{reg("s2", "two", didAlice), Authenticate{Session: "s2", DID: didAlice, TokenHash: "t"},
		Join{Session: "s2", Channel: "#c"}, SetFavorites{DID: didAlice, Favorites: []string{"#c"}}, Away{Session: "s2", Text: "a"}}
	tests := []struct {
		name, snap string
		cmds       []Command
	}{
		{"empty object", `{}`, basic},
		{
			"null maps",
			`{"sessions":null,"nicks":null,"nick_owners":null,"did_nicks":null,"channels":null,"tokens":null,"favorites":null,"requests":null}`,
			append(basic, modes("s2", "#c", add("b", "z!*@*"), add("I", "y!*@*"), addTo("o", "s2"))),
		},
		{
			"null nested maps",
			`{"sessions":{"s1":{"id":"s1","node":"n","nick":"one","user":"u","host":"h","channels":null}},"nicks":{"one":"s1"},` +
				`"channels":{"#c":{"name":"#c","founder_did":"did:x","members":null}}}`,
			append(basic, Topic{Session: "s2", Channel: "#c", Text: "t"}, Invite{Session: "s2", Channel: "#c", Target: "s1"},
				Join{Session: "s1", Channel: "#c"}, Join{Session: "s1", Channel: "#d"}),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			if err := h.m.Restore(strings.NewReader(tc.snap)); err != nil {
				t.Fatalf("restore: %v", err)
			}
			h.mustOK(tc.cmds...)
			h.read(func(st *State) {
				if err := checkInvariants(st); err != nil {
					t.Error(err)
				}
			})
		})
	}
}

func TestHashDistinguishesStates(t *testing.T) {
	a, b := newHarness(t), newHarness(t)
	if a.m.Hash() != b.m.Hash() {
		t.Fatalf("empty machines differ")
	}
	a.mustOK(reg("s1", "one", ""))
	b.mustOK(reg("s1", "One", ""))
	if a.m.Hash() == b.m.Hash() {
		t.Errorf("different states hash alike")
	}
	var st State
	snap := snapshotBytes(t, a.m)
	if err := st.decode(snap); !json.Valid(snap) || err != nil || st.sessions["s1"] == nil {
		t.Errorf("snapshot is not the JSON of State: %v", err)
	}
}
