package fsm

import "testing"

func TestApplyRegisterKey(t *testing.T) {
	key := func(kid string, seed byte) RegisterKey {
		return RegisterKey{DID: didAlice, KID: kid, PublicKey: testKey(seed), Source: "local-session", Purpose: "msgsig"}
	}
	expiring := func(at int64) RegisterKey {
		k := key("k1", 1)
		k.ExpiresAt = at
		return k
	}
	// The harness stamps entry i at timeBase+i*1000 ms, so unix second timeBase/1000+i.
	sec := func(ms int64) int64 { return ms / 1000 }
	record := func(check func(t *testing.T, k *KeyRecord, now int64)) func(*testing.T, *State, int64) {
		return func(t *testing.T, st *State, at int64) {
			k := st.key(didAlice, "k1")
			if k == nil {
				t.Fatalf("key not filed: %v", st.keys)
			}
			check(t, k, sec(at))
		}
	}
	shortKey := key("k1", 1)
	shortKey.PublicKey = shortKey.PublicKey[:31]
	noSource := key("k1", 1)
	noSource.Source = ""
	noDID := key("k1", 1)
	noDID.DID = ""

	runApplyCases(t, []applyCase{
		{
			name: "new key", cmd: expiring(1_900_000_000), want: Result{Code: OK},
			check: record(func(t *testing.T, k *KeyRecord, now int64) {
				want := KeyRecord{KID: "k1", PublicKey: testKey(1), Source: "local-session", Purpose: "msgsig",
					RegisteredAt: now, LastSeenAt: now, ExpiresAt: 1_900_000_000}
				if !sameJSON(t, k, want) {
					t.Errorf("record %+v, want %+v", k, want)
				}
				if !k.Live(now) || k.EndedAt() != 1_900_000_000 {
					t.Errorf("live %v ended %d", k.Live(now), k.EndedAt())
				}
			}),
		},
		{
			name: "seen again advances last seen", setup: []Command{key("k1", 1)}, cmd: key("k1", 1), want: Result{Code: NoChange},
			check: record(func(t *testing.T, k *KeyRecord, now int64) {
				if k.LastSeenAt != now || k.RegisteredAt != now-1 {
					t.Errorf("registered %d last seen %d, now %d", k.RegisteredAt, k.LastSeenAt, now)
				}
			}),
		},
		{
			name: "second key for the DID", setup: []Command{key("k1", 1)}, cmd: key("k2", 2), want: Result{Code: OK},
			check: func(t *testing.T, st *State, _ int64) {
				if len(st.keys[didAlice]) != 2 || st.key(didAlice, "k2") == nil {
					t.Errorf("keys %v", st.keys[didAlice])
				}
			},
		},
		{name: "same kid, other key", setup: []Command{key("k1", 1)}, cmd: key("k1", 2), want: Result{Code: ErrInvalid}},
		{
			name: "retired key", setup: []Command{key("k1", 1), RetireKey{DID: didAlice, KID: "k1"}}, cmd: key("k1", 1), want: Result{Code: ErrKeyEnded},
			check: record(func(t *testing.T, k *KeyRecord, now int64) {
				if k.RemovedAt != now-1 || k.Live(now) {
					t.Errorf("record %+v", k)
				}
			}),
		},
		{name: "already expired", cmd: expiring(timeBase/1000 + 1), want: Result{Code: ErrKeyEnded}},
		{name: "public key not 32 bytes", cmd: shortKey, want: Result{Code: ErrInvalid}},
		{name: "no source", cmd: noSource, want: Result{Code: ErrInvalid}},
		{name: "no DID", cmd: noDID, want: Result{Code: ErrInvalid}},
		{name: "no kid", cmd: key("", 1), want: Result{Code: ErrInvalid}},
	})
}

func TestApplyRetireKey(t *testing.T) {
	reg1 := RegisterKey{DID: didAlice, KID: "k1", PublicKey: testKey(1), Source: "server-key"}
	runApplyCases(t, []applyCase{
		{
			name: "retire", setup: []Command{reg1}, cmd: RetireKey{DID: didAlice, KID: "k1"}, want: Result{Code: OK},
			check: func(t *testing.T, st *State, at int64) {
				if k := st.key(didAlice, "k1"); k == nil || k.RemovedAt != at/1000 || k.EndedAt() != at/1000 {
					t.Errorf("record %+v", k)
				}
			},
		},
		{name: "retire twice", setup: []Command{reg1, RetireKey{DID: didAlice, KID: "k1"}}, cmd: RetireKey{DID: didAlice, KID: "k1"}, want: Result{Code: NoChange}},
		{name: "unknown kid", setup: []Command{reg1}, cmd: RetireKey{DID: didAlice, KID: "k9"}, want: Result{Code: NoChange}},
		{name: "unknown DID", setup: []Command{reg1}, cmd: RetireKey{DID: didBob, KID: "k1"}, want: Result{Code: NoChange}},
	})
}

func TestKeyRecordLifetime(t *testing.T) {
	tests := []struct {
		name  string
		k     KeyRecord
		now   int64
		live  bool
		ended int64
	}{
		{"forever", KeyRecord{}, 100, true, 0},
		{"before expiry", KeyRecord{ExpiresAt: 200}, 199, true, 200},
		{"at expiry", KeyRecord{ExpiresAt: 200}, 200, false, 200},
		{"retired", KeyRecord{RemovedAt: 150}, 100, false, 150},
		{"retired before expiry", KeyRecord{RemovedAt: 150, ExpiresAt: 200}, 100, false, 150},
		{"expired before retirement", KeyRecord{RemovedAt: 250, ExpiresAt: 200}, 100, false, 200},
	}
	for _, tc := range tests {
		if got := tc.k.Live(tc.now); got != tc.live {
			t.Errorf("%s: Live = %v", tc.name, got)
		}
		if got := tc.k.EndedAt(); got != tc.ended {
			t.Errorf("%s: EndedAt = %d, want %d", tc.name, got, tc.ended)
		}
	}
}
