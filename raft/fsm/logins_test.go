package fsm

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

func init() {
	extraSamples = append(extraSamples,
		SetClientPassword{DID: "did:plc:alice", Name: "irssi", Salt: []byte{1, 2}, Iterations: 4096, StoredKey: []byte{3}, ServerKey: []byte{4}},
		RevokeClientPassword{DID: "did:plc:alice", Name: "irssi"},
		RegisterAccount{Name: "Bar", DID: "did:web:x:u:bar", Salt: []byte{1}, Iterations: 4096, StoredKey: []byte{2}, ServerKey: []byte{3}, Session: "s1"})
	const env = `{"rid":"r1","node":"n1","ts":1700000000000,"body":`
	extraGolden = append(extraGolden,
		"\x54\x00"+env+`{"did":"did:plc:alice","name":"irssi","salt":"AQI=","iterations":4096,"stored_key":"Aw==","server_key":"BA=="}}`,
		"\x55\x00"+env+`{"did":"did:plc:alice","name":"irssi"}}`,
		"\x56\x00"+env+`{"name":"Bar","did":"did:web:x:u:bar","salt":"AQ==","iterations":4096,"stored_key":"Ag==","server_key":"Aw==","session":"s1"}}`)
	extraGenerators = append(extraGenerators, func(c chooser) Command {
		salt := func() []byte {
			return pick(c, [][]byte{bytes.Repeat([]byte{1}, SCRAMSaltLen), bytes.Repeat([]byte{2}, SCRAMSaltLen), {3}})
		}
		key := func() []byte { return pick(c, [][]byte{bytes.Repeat([]byte{7}, SCRAMKeyLen), {9}}) }
		name := func() string { return pick(c, []string{"irssi", "phone", "bad name", ""}) }
		switch c.intn(4) {
		case 0:
			return RevokeClientPassword{DID: pick(c, genDIDs), Name: name()}
		case 1:
			acct := pick(c, []string{"ann", "Zed", "zed", "9bad"})
			k := key()
			return RegisterAccount{Name: acct, DID: "did:web:example.org:u:" + Fold(acct), Salt: salt(), Iterations: MinSCRAMIterations,
				StoredKey: k, ServerKey: k, Session: pick(c, genSessions)}
		default:
			k := key()
			return SetClientPassword{DID: pick(c, genDIDs), Name: name(), Salt: salt(), Iterations: MinSCRAMIterations, StoredKey: k, ServerKey: k}
		}
	})
}

func verifierOf(b byte) ([]byte, []byte) {
	return bytes.Repeat([]byte{b}, SCRAMKeyLen), bytes.Repeat([]byte{b + 1}, SCRAMKeyLen)
}

func TestClientPasswords(t *testing.T) {
	h := newHarness(t)
	salt, other := bytes.Repeat([]byte{5}, SCRAMSaltLen), bytes.Repeat([]byte{6}, SCRAMSaltLen)
	sk, srv := verifierOf(1)
	set := func(did, name string, salt []byte, iter int) SetClientPassword {
		return SetClientPassword{DID: did, Name: name, Salt: salt, Iterations: iter, StoredKey: sk, ServerKey: srv}
	}
	steps := []struct {
		name string
		cmd  Command
		code Code
		want []string // alice's password names afterwards
	}{
		{"first", set(didAlice, "irssi", salt, 4096), OK, []string{"irssi"}},
		{"second, same salt", set(didAlice, "phone", salt, 4096), OK, []string{"irssi", "phone"}},
		{"name taken", set(didAlice, "phone", salt, 4096), ErrPasswordExists, []string{"irssi", "phone"}},
		{"another salt", set(didAlice, "laptop", other, 4096), ErrSaltMismatch, []string{"irssi", "phone"}},
		{"another count", set(didAlice, "laptop", salt, 8192), ErrSaltMismatch, []string{"irssi", "phone"}},
		{"bad name", set(didAlice, "a b", salt, 4096), ErrInvalid, []string{"irssi", "phone"}},
		{"long name", set(didAlice, strings.Repeat("a", MaxPasswordNameLen+1), salt, 4096), ErrInvalid, []string{"irssi", "phone"}},
		{"few iterations", set(didBob, "x", salt, 1000), ErrInvalid, []string{"irssi", "phone"}},
		{"short salt", set(didBob, "x", salt[:8], 4096), ErrInvalid, []string{"irssi", "phone"}},
		{"no DID", set("", "x", salt, 4096), ErrInvalid, []string{"irssi", "phone"}},
		{"short key", SetClientPassword{DID: didBob, Name: "x", Salt: salt, Iterations: 4096, StoredKey: sk[:5], ServerKey: srv}, ErrInvalid, []string{"irssi", "phone"}},
		{"revoke", RevokeClientPassword{DID: didAlice, Name: "irssi"}, OK, []string{"phone"}},
		{"revoke again", RevokeClientPassword{DID: didAlice, Name: "irssi"}, ErrNoSuchPassword, []string{"phone"}},
		{"revoke another DID's", RevokeClientPassword{DID: didBob, Name: "phone"}, ErrNoSuchPassword, []string{"phone"}},
		{"revoke the last", RevokeClientPassword{DID: didAlice, Name: "phone"}, OK, nil},
		{"new salt after the last", set(didAlice, "irssi", other, 4096), OK, []string{"irssi"}},
	}
	for _, st := range steps {
		res := h.apply(st.cmd)
		var got []string
		h.read(func(s *State) {
			for _, p := range LoginsOf(s).Passwords(didAlice) {
				got = append(got, p.Name)
			}
		})
		if res.Code != st.code || strings.Join(got, ",") != strings.Join(st.want, ",") {
			t.Fatalf("%s: code %s, names %v; want %s, %v", st.name, res.Code, got, st.code, st.want)
		}
	}
	h.read(func(s *State) {
		creds, ok := LoginsOf(s).Credentials(didAlice)
		if !ok || creds.DID != didAlice || !bytes.Equal(creds.Salt, other) || len(creds.Verifiers) != 1 ||
			!bytes.Equal(creds.Verifiers[0].StoredKey, sk) || !bytes.Equal(creds.Verifiers[0].ServerKey, srv) {
			t.Fatalf("credentials %+v %v", creds, ok)
		}
		if _, ok := LoginsOf(s).Credentials(didBob); ok {
			t.Fatal("credentials for a DID without passwords")
		}
	})
}

func TestClientPasswordsAreBounded(t *testing.T) {
	h := newHarness(t)
	salt := bytes.Repeat([]byte{5}, SCRAMSaltLen)
	sk, srv := verifierOf(1)
	for i := range MaxClientPasswords {
		h.mustOK(SetClientPassword{DID: didAlice, Name: "p" + strconv.Itoa(i), Salt: salt, Iterations: 4096, StoredKey: sk, ServerKey: srv})
	}
	if res := h.apply(SetClientPassword{DID: didAlice, Name: "more", Salt: salt, Iterations: 4096, StoredKey: sk, ServerKey: srv}); res.Code != ErrTooManyPasswords {
		t.Fatalf("password beyond the bound: %s", res.Code)
	}
}

func TestRegisterAccount(t *testing.T) {
	h := newHarness(t)
	salt := bytes.Repeat([]byte{5}, SCRAMSaltLen)
	sk, srv := verifierOf(3)
	reg := func(name, session string) RegisterAccount {
		return RegisterAccount{Name: name, DID: HostedAccountDID("chat.example", name), Salt: salt, Iterations: 4096,
			StoredKey: sk, ServerKey: srv, Session: session}
	}
	h.mustOK(
		RegisterSession{ID: "s1", Node: "node-a", Nick: "Root", User: "u", Host: "h"},
		RegisterSession{ID: "s2", Node: "node-a", Nick: "bar", User: "u", Host: "h"},
		RegisterSession{ID: "s3", Node: "node-a", Nick: "carol", User: "u", Host: "h", DID: didCarol},
	)
	steps := []struct {
		name string
		cmd  RegisterAccount
		code Code
	}{
		{"own nick", reg("Bar", "s2"), OK},
		{"again", reg("bar", "s2"), ErrAccountExists},
		{"held by another session", reg("root", "s2"), ErrAccountExists},
		{"owned by a DID", reg("carol", "s2"), ErrAccountExists},
		{"free name", reg("dave", ""), OK},
		{"bad name", reg("9lives", ""), ErrInvalid},
		{"not a did:web", RegisterAccount{Name: "erin", DID: "did:plc:erin", Salt: salt, Iterations: 4096, StoredKey: sk, ServerKey: srv}, ErrInvalid},
		{"DID of another name", RegisterAccount{Name: "erin", DID: HostedAccountDID("chat.example", "fred"), Salt: salt, Iterations: 4096, StoredKey: sk, ServerKey: srv}, ErrInvalid},
		{"no verifier", RegisterAccount{Name: "erin", DID: HostedAccountDID("chat.example", "erin")}, ErrInvalid},
	}
	for _, st := range steps {
		if res := h.apply(st.cmd); res.Code != st.code {
			t.Fatalf("%s: %s, want %s", st.name, res.Code, st.code)
		}
	}
	h.read(func(s *State) {
		did := "did:web:chat.example:u:bar"
		if a, ok := LoginsOf(s).HostedAccount("BAR"); !ok || a.DID != did || a.Name != "Bar" {
			t.Fatalf("account %+v %v", a, ok)
		}
		if s.NickOwner("bar") != did {
			t.Fatalf("nick bar owned by %q", s.NickOwner("bar"))
		}
		for _, login := range []string{"bar", "BAR", did} {
			if c, ok := LoginsOf(s).Credentials(login); !ok || c.DID != did || c.Verifiers[0].Name != AccountPasswordName {
				t.Fatalf("login %s: %+v %v", login, c, ok)
			}
		}
		if _, ok := LoginsOf(s).HostedAccount("root"); ok {
			t.Fatal("root registered")
		}
	})
}

// TestLoginsSnapshotSection checks that a state without logins encodes as before (no section)
// and that one with logins survives a snapshot.
func TestLoginsSnapshotSection(t *testing.T) {
	h := newHarness(t)
	h.mustOK(RegisterSession{ID: "s1", Node: "node-a", Nick: "ann", User: "u", Host: "h"})
	data, err := json.Marshal(h.m.state)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte(`"logins"`)) {
		t.Fatalf("a state without logins encodes a logins section: %s", data)
	}
	sk, srv := verifierOf(1)
	h.mustOK(SetClientPassword{DID: didAlice, Name: "irssi", Salt: bytes.Repeat([]byte{5}, SCRAMSaltLen), Iterations: 4096, StoredKey: sk, ServerKey: srv})
	snap := snapshotBytes(t, h.m)
	fresh := restoredCopy(t, h.m, snap)
	fresh.Read(func(s *State) {
		if _, ok := LoginsOf(s).Credentials(didAlice); !ok {
			t.Fatal("password lost in the snapshot")
		}
	})
}
