package fsm

import (
	"bytes"
	"maps"
	"strconv"
	"testing"
)

// localByScan is what LocalMembers must answer, computed from the channels and sessions.
func localByScan(st *State, channel string) map[string]Member {
	out := map[string]Member{}
	ch := st.channels[channel]
	if ch == nil {
		return out
	}
	for id, m := range ch.Members() {
		if se, ok := st.Session(id); ok && se.Node == st.node {
			out[id] = m
		}
	}
	return out
}

// TestLocalMembersIndex applies random logs and checks after every entry that the local index
// Apply keeps equals a scan of the state, and that a restored replica rebuilds the same index.
func TestLocalMembersIndex(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		m := New(quietLogger())
		m.SetLocalNode("node-a")
		checked := 0
		check := func(m *Machine, at int) {
			m.Read(func(st *State) {
				for ch := range st.Channels() {
					want := localByScan(st, ch.Name())
					got := maps.Collect(st.LocalMembers(ch.Name()))
					if !maps.Equal(got, want) {
						t.Fatalf("seed %d entry %d %s: local members %v, want %v", seed, at, ch.Name(), got, want)
					}
					checked += len(want)
				}
				for name := range st.local {
					if st.channels[name] == nil {
						t.Fatalf("seed %d entry %d: index keeps deleted channel %s", seed, at, name)
					}
				}
			})
		}
		// LocalMembersVersion must move with every change to the index (a reader keeps member
		// lists while it stays), and should stay when the index does not change.
		var version uint64
		var index map[string]map[string]bool
		moved, stayed := 0, 0
		checkVersion := func(m *Machine, at int) {
			m.Read(func(st *State) {
				now := localSets(st)
				v := st.LocalMembersVersion()
				if v == version && !maps.EqualFunc(now, index, maps.Equal) {
					t.Fatalf("seed %d entry %d: the local index changed and its version stayed %d", seed, at, v)
				}
				if v == version {
					stayed++
				} else {
					moved++
				}
				version, index = v, now
			})
		}
		for i, e := range randomLog(seed, 1500) {
			m.Apply(uint64(i+1), e)
			check(m, i+1)
			checkVersion(m, i+1)
		}
		if checked == 0 {
			t.Fatalf("seed %d: no local member was ever checked", seed)
		}
		if moved == 0 || stayed == 0 {
			t.Fatalf("seed %d: the version moved at %d entries and stayed at %d: the log does not exercise it", seed, moved, stayed)
		}
		restored := New(quietLogger())
		restored.SetLocalNode("node-a")
		if err := restored.Restore(bytes.NewReader(snapshotBytes(t, m))); err != nil {
			t.Fatal(err)
		}
		check(restored, -1)
		// A restore over the same machine moves the version, even to a state with the same index.
		before := version
		if err := m.Restore(bytes.NewReader(snapshotBytes(t, m))); err != nil {
			t.Fatal(err)
		}
		m.Read(func(st *State) {
			if st.LocalMembersVersion() <= before {
				t.Fatalf("seed %d: version %d after a restore, %d before it", seed, st.LocalMembersVersion(), before)
			}
		})
	}
}

// localSets is the local index as channel → session ids.
func localSets(st *State) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for name, byID := range st.local {
		ids := map[string]bool{}
		for id := range byID {
			ids[id] = true
		}
		out[name] = ids
	}
	return out
}

// TestReadAPI checks the accessors against a small state built through Apply.
func TestReadAPI(t *testing.T) {
	h := newHarness(t)
	h.m.SetLocalNode("node-a")
	h.mustOK(
		RegisterSession{ID: "s1", Node: "node-a", Incarnation: "i", Nick: "Alice", User: "a", Host: "h", DID: didAlice},
		RegisterSession{ID: "s2", Node: "node-b", Incarnation: "i", Nick: "Bob", User: "b", Host: "h"},
		Join{Session: "s1", Channel: "#c"},
		Join{Session: "s2", Channel: "#c"},
	)
	h.read(func(st *State) {
		ch := st.channels["#c"]
		if ch == nil || ch.MemberCount() != 2 || !ch.IsMember("s1") || ch.IsMember("s3") {
			t.Fatalf("channel #c: %+v", ch)
		}
		if m, ok := ch.Member("s1"); !ok || !m.Op {
			t.Errorf("s1 in #c: %+v %v, want an op", m, ok)
		}
		if got := maps.Collect(st.LocalMembers("#c")); len(got) != 1 || !got["s1"].Op {
			t.Errorf("local members %v, want s1 only", got)
		}
		if se, ok := st.Session("s2"); !ok || !se.InChannel("#c") || st.SessionCount() != 2 {
			t.Errorf("sessions: %d", st.SessionCount())
		}
		if got := st.OwnedNick(didAlice); got != "alice" || st.NickOwner("alice") != didAlice {
			t.Errorf("nick owner: %q %q", got, st.NickOwner("alice"))
		}
		if !st.mayRead(ch, "") || st.Index() != 4 {
			t.Errorf("MayRead of a public channel or Index %d", st.Index())
		}
	})
}

// TestIteratorsDoNotAllocate: the fan-out paths walk a channel's members through the read API
// under the state's read lock on every message; walking must cost no allocation.
func TestIteratorsDoNotAllocate(t *testing.T) {
	h := newHarness(t)
	h.m.SetLocalNode("node-a")
	for i := range 200 {
		id, node := "s"+strconv.Itoa(i), []string{"node-a", "node-b"}[i%2]
		h.mustOK(RegisterSession{ID: id, Node: node, Incarnation: "i", Nick: "n" + strconv.Itoa(i), User: "u", Host: "h"},
			Join{Session: id, Channel: "#c"})
	}
	h.read(func(st *State) {
		ch := st.channels["#c"]
		var local, all, ops int
		walk := func() {
			for id, m := range st.LocalMembers("#c") {
				local += len(id)
				if m.Op {
					ops++
				}
			}
			for id := range ch.Members() {
				all += len(id)
			}
		}
		if allocs := testing.AllocsPerRun(50, walk); allocs != 0 {
			t.Errorf("walking the members allocates %.1f times", allocs)
		}
		if local == 0 || all <= local || ops == 0 {
			t.Errorf("walked %d local and %d member id bytes, %d ops", local, all, ops)
		}
	})
}

// TestKeyViewReadOnly checks that what a KeyView hands out is the caller's to change: writing
// to it leaves the filed key as it was.
func TestKeyViewReadOnly(t *testing.T) {
	st := NewState()
	a := &Applier{st: st, env: Envelope{Time: timeBase}}
	if r := a.registerKey(RegisterKey{DID: didAlice, KID: "k1", PublicKey: testKey(1), Source: "local-session"}); r.Code != OK {
		t.Fatalf("register: %v", r)
	}
	k, ok := st.Key(didAlice, "k1")
	if !ok || k.KID() != "k1" || k.Source() != "local-session" || !k.Live(timeBase/1000) {
		t.Fatalf("Key = %+v, %v", k, ok)
	}
	pub := k.PublicKey()
	pub[0] ^= 0xff
	rec := k.Record()
	rec.PublicKey[1] ^= 0xff
	rec.RemovedAt = 1
	if got := st.key(didAlice, "k1"); string(got.PublicKey) != string(testKey(1)) || got.RemovedAt != 0 {
		t.Fatalf("filed key changed through the view: %+v", got)
	}
	if _, ok := st.Key(didAlice, "k2"); ok {
		t.Fatal("Key found a key never filed")
	}
	if ks := st.KeysOf(didAlice); len(ks) != 1 || ks[0].KID() != "k1" {
		t.Fatalf("KeysOf = %v", ks)
	}
}

// TestSessionCopiesReadOnly checks that the sessions the read API hands out are copies: writing
// to one leaves the state as it was.
func TestSessionCopiesReadOnly(t *testing.T) {
	st := NewState()
	a := &Applier{st: st, env: Envelope{Time: timeBase}}
	if r := a.registerSession(RegisterSession{ID: "s1", Node: "n1", Nick: "alice", User: "a", Host: "h", DID: didAlice, TokenHash: "tok"}); r.Code != OK {
		t.Fatalf("register: %v", r)
	}
	se, ok := st.Session("s1")
	if !ok || se.Nick != "alice" {
		t.Fatalf("Session = %+v, %v", se, ok)
	}
	se.Nick, se.Oper = "mallory", true
	for s := range st.Sessions() {
		s.Away = "gone"
	}
	byNick, _ := st.SessionByNick("alice")
	byNick.Bot = true
	byToken, _ := st.SessionByToken("tok")
	byToken.DID = "did:plc:other"
	for _, s := range st.SessionsByDID(didAlice) {
		s.Host = "elsewhere"
	}
	if got := *st.sessions["s1"]; got.Nick != "alice" || got.Oper || got.Away != "" || got.Bot || got.DID != didAlice || got.Host != "h" {
		t.Fatalf("session changed through a copy: %+v", got)
	}
	if _, ok := st.Session("s2"); ok {
		t.Fatal("Session found a session never registered")
	}
	if !st.NickInUse("ALICE") || st.NickInUse("bob") {
		t.Fatal("NickInUse disagrees with the nicks in use")
	}
}

// TestChannelViewReadOnly checks that a ChannelView reads the live channel and that the lists it
// hands out are copies: writing to them leaves the channel as it was.
func TestChannelViewReadOnly(t *testing.T) {
	h := newHarness(t)
	h.mustOK(append(world(), Join{Session: "s-alice", Channel: "#c"},
		Topic{Session: "s-alice", Channel: "#c", Text: "hello"},
		Mode{Session: "s-alice", Channel: "#c", Changes: []ModeChange{{Add: true, Mode: "b", Arg: "*!*@bad"}}})...)
	h.read(func(st *State) {
		ch, ok := st.Channel("#c")
		if !ok || ch.Name() != "#c" || ch.Topic() != "hello" || !ch.IsMember("s-alice") || len(ch.Bans()) != 1 {
			t.Fatalf("Channel(#c) = %+v, %v", ch, ok)
		}
		bans := ch.Bans()
		bans[0].Mask = "*!*@*"
		if got := st.channels["#c"].Bans[0].Mask; got != "*!*@bad" {
			t.Fatalf("ban list changed through a copy: %q", got)
		}
		if _, ok := st.Channel("#none"); ok {
			t.Fatal("Channel found a channel never created")
		}
		var zero ChannelView
		if zero.MessageVisible("", true) {
			t.Fatal("a message is visible through no channel")
		}
		n := 0
		for c := range st.Channels() {
			n++
			if c.Name() != "#c" {
				t.Errorf("Channels yields %q", c.Name())
			}
		}
		if n != 1 {
			t.Errorf("Channels yields %d channels, want 1", n)
		}
	})
}
