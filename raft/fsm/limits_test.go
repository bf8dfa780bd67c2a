package fsm

import (
	"bytes"
	"fmt"
	"testing"
)

func TestFoundedChannelsPerDID(t *testing.T) {
	h := newHarness(t)
	h.mustOK(world()...)
	for i := range MaxFoundedPerDID {
		h.mustOK(Join{Session: "s-alice", Channel: fmt.Sprintf("#f%d", i)})
	}
	if r := h.apply(Join{Session: "s-alice", Channel: "#onemore"}); r.Code != ErrTooManyFounded {
		t.Fatalf("creating channel %d: %v, want too-many-founded", MaxFoundedPerDID+1, r.Code)
	}
	// Joining channels that exist, and guests creating channels, are not limited.
	h.mustOK(Join{Session: "s-bob", Channel: "#bobs"}, Join{Session: "s-alice", Channel: "#bobs"},
		Join{Session: "s-guest", Channel: "#guests"})
	// An unowned channel everyone left is joined, not founded, by a DID at the limit.
	h.mustOK(Topic{Session: "s-guest", Channel: "#guests", Text: "kept"}, Part{Session: "s-guest", Channel: "#guests"})
	if r := h.apply(Join{Session: "s-alice", Channel: "#guests"}); r.Code != OK || r.Member.Op {
		t.Fatalf("joining a left unowned channel at the limit: %+v", r)
	}
	h.read(func(st *State) {
		if got := st.channels["#guests"].FounderDID; got != "" {
			t.Fatalf("founded by %q at the limit", got)
		}
	})
	// A founded channel that expires makes room.
	h.mustOK(Part{Session: "s-alice", Channel: "#f0"})
	h.mustOK(ExpireChannels{OwnedAfter: 1})
	h.read(func(st *State) {
		if st.channels["#f0"] != nil {
			t.Fatalf("#f0 not expired")
		}
	})
	h.mustOK(Join{Session: "s-alice", Channel: "#onemore"})
}

func TestExpireChannels(t *testing.T) {
	const minute = int64(60_000)
	// Each case: a setup leaving channels empty, then ExpireChannels applied twice with the given
	// gap between the two sweeps; want: the channels left after the second.
	type sweep = ExpireChannels
	cases := []struct {
		name  string
		setup []Command
		first sweep
		gap   int // entries applied between (each 1 s later)
		last  sweep
		want  []string
	}{
		{"unowned with a topic expires", []Command{Join{Session: "s-guest", Channel: "#t"},
			Topic{Session: "s-guest", Channel: "#t", Text: "x"}, Part{Session: "s-guest", Channel: "#t"}},
			sweep{}, 2, sweep{UnownedAfter: 2000}, nil},
		{"too early", []Command{Join{Session: "s-guest", Channel: "#t"},
			Topic{Session: "s-guest", Channel: "#t", Text: "x"}, Part{Session: "s-guest", Channel: "#t"}},
			sweep{}, 0, sweep{UnownedAfter: minute}, []string{"#t"}},
		{"founded kept when owned expiry is off", []Command{Join{Session: "s-alice", Channel: "#o"},
			Part{Session: "s-alice", Channel: "#o"}}, sweep{}, 3, sweep{UnownedAfter: 1}, []string{"#o"}},
		{"founded expires", []Command{Join{Session: "s-alice", Channel: "#o"},
			Part{Session: "s-alice", Channel: "#o"}}, sweep{}, 3, sweep{OwnedAfter: 1000}, nil},
		{"a member keeps it", []Command{Join{Session: "s-alice", Channel: "#o"}},
			sweep{}, 3, sweep{OwnedAfter: 1, UnownedAfter: 1}, []string{"#o"}},
		{"a remote member keeps it", []Command{Join{Session: "s-alice", Channel: "#o"},
			RemotePresence{Peer: "did:web:p.example", Op: RemoteJoin, Channel: "#o", Member: RemoteMember{Nick: "rb", User: "u", Host: "p.example"}},
			Part{Session: "s-alice", Channel: "#o"}}, sweep{}, 3, sweep{OwnedAfter: 1}, []string{"#o"}},
		{"rejoined channel starts again", []Command{Join{Session: "s-alice", Channel: "#o"},
			Part{Session: "s-alice", Channel: "#o"}, Join{Session: "s-alice", Channel: "#o"}, Part{Session: "s-alice", Channel: "#o"}},
			sweep{}, 0, sweep{OwnedAfter: 3000}, []string{"#o"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.mustOK(world()...)
			h.mustOK(tc.setup...)
			h.mustOK(tc.first)
			for range tc.gap {
				h.mustOK(Away{Session: "s-bob", Text: fmt.Sprint(h.index)})
			}
			r := h.apply(tc.last)
			var left []string
			h.read(func(st *State) {
				for name := range st.channels {
					left = append(left, name)
				}
				if err := checkInvariants(st); err != nil {
					t.Fatal(err)
				}
			})
			if !sameJSON(t, left, tc.want) {
				t.Fatalf("channels left %v, want %v (result %+v)", left, tc.want, r)
			}
		})
	}

	// A snapshot of an older version (no empty_since) restores; the first sweep starts the clock.
	h := newHarness(t)
	old := []byte(`{"channels":{"#old":{"name":"#old","created_at":1,"topic":"t","members":{}}},"index":7}`)
	if err := h.m.Restore(bytes.NewReader(old)); err != nil {
		t.Fatal(err)
	}
	h.index = 7
	h.mustOK(ExpireChannels{UnownedAfter: 1})
	h.read(func(st *State) {
		if st.channels["#old"] == nil || st.channels["#old"].EmptySince == 0 {
			t.Fatalf("the first sweep after the upgrade deleted #old or did not start its clock")
		}
	})
	h.mustOK(ExpireChannels{UnownedAfter: 1})
	h.read(func(st *State) {
		if st.channels["#old"] != nil {
			t.Fatalf("#old not expired by the second sweep")
		}
	})
	if r := h.apply(ExpireChannels{UnownedAfter: -1}); r.Code != ErrInvalid {
		t.Fatalf("negative expiry: %v", r.Code)
	}
}

func TestSessionKeysPerDID(t *testing.T) {
	h := newHarness(t)
	h.mustOK(world()...)
	key := func(i int) RegisterKey {
		return RegisterKey{DID: didBob, KID: fmt.Sprintf("k%03d", i), PublicKey: testKey(byte(i)), Source: "local-session"}
	}
	// The first key is held by bob's live session; the others belong to sessions that ended.
	first := key(0)
	first.Session = "s-bob"
	h.mustOK(first)
	for i := 1; i < MaxSessionKeysPerDID; i++ {
		h.mustOK(key(i))
	}
	h.mustOK(key(MaxSessionKeysPerDID))
	h.read(func(st *State) {
		if n := len(st.keys[didBob]); n != MaxSessionKeysPerDID {
			t.Fatalf("%d keys after one more than the limit", n)
		}
		if st.key(didBob, "k000") == nil || st.key(didBob, "k001") != nil {
			t.Fatalf("evicted the wrong key: k000 kept %v, k001 kept %v", st.key(didBob, "k000") != nil, st.key(didBob, "k001") != nil)
		}
	})
	// Keys of other sources are not counted.
	h.mustOK(RegisterKey{DID: didBob, KID: "doc", PublicKey: testKey(200), Source: "did-document"})

	// When every key is in use, one more is refused.
	h2 := newHarness(t)
	h2.mustOK(world()...)
	for i := range MaxSessionKeysPerDID {
		id := fmt.Sprintf("s%d", i)
		h2.mustOK(reg(id, fmt.Sprintf("n%d", i), didCarol))
		k := key(i)
		k.DID, k.Session = didCarol, id
		h2.mustOK(k)
	}
	k := key(99)
	k.DID = didCarol
	if r := h2.apply(k); r.Code != ErrTooManyKeys {
		t.Fatalf("a key beyond the limit with every key in use: %v", r.Code)
	}
}

func TestFavoritesMustBeChannelNames(t *testing.T) {
	h := newHarness(t)
	for _, list := range [][]string{{"#ok", "no-hash"}, {"#UPPER"}, {"#" + string(bytes.Repeat([]byte("x"), MaxChannelLen))}, {""}} {
		if r := h.apply(SetFavorites{DID: didAlice, Favorites: list}); r.Code != ErrInvalid {
			t.Errorf("favorites %q: %v, want invalid", list, r.Code)
		}
	}
	h.mustOK(SetFavorites{DID: didAlice, Favorites: []string{"#ok", "&also"}})
}
