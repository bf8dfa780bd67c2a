package fsm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// extraGolden are the pinned encodings of extraSamples, in order.
var extraGolden []string

// extraSamples are samples of the command types registered from other files; their tests add to
// it from init.
var extraSamples []Command

// sampleCommands holds one command of every type with every field set.
func sampleCommands() []Command {
	return append([]Command{
		RegisterSession{ID: "s1", Node: "n1", Incarnation: "i1", Nick: "Alice", User: "al", Host: "cloak.example",
			Realname: "Alice A", DID: "did:plc:alice", TokenHash: "th1", Oper: true, Secure: true},
		ChangeNick{Session: "s1", Nick: "alice2"},
		Authenticate{Session: "s1", DID: "did:plc:alice", TokenHash: "th2", Host: "alice.example", Oper: true},
		EndSession{Session: "s1", Reason: "bye"},
		Join{Session: "s1", Channel: "#c", Key: "k"},
		Part{Session: "s1", Channel: "#c", Reason: "later"},
		Kick{Session: "s1", Channel: "#c", Target: "s2", Reason: "spam"},
		Topic{Session: "s1", Channel: "#c", Text: `hello <world> & "you"`},
		Mode{Session: "s1", Channel: "#c", Changes: []ModeChange{
			{Add: true, Mode: "o", Arg: "bob", Target: "s2"}, {Add: false, Mode: "k"}, {Add: true, Mode: "b", Arg: "*!*@h"}}},
		Invite{Session: "s1", Channel: "#c", Target: "s2"},
		Away{Session: "s1", Text: "gone"},
		Oper{Session: "s1"},
		PurgeNode{Node: "n1", Keep: "i2", Reason: "restart"},
		SetFavorites{DID: "did:plc:alice", Favorites: []string{"#a", "#b"}},
		Pin{Session: "s1", Channel: "#c", MsgID: "01HXMSG"},
		Unpin{Session: "s1", Channel: "#c", MsgID: "01HXMSG"},
		RegisterKey{DID: "did:plc:alice", KID: "k1", PublicKey: testKey(1), Source: "local-session", Purpose: "msgsig",
			ExpiresAt: 1_800_000_000},
		RetireKey{DID: "did:plc:alice", KID: "k1"},
		FederatedTopic{Channel: "#c", Text: "from the home", SetBy: "bob!u@peer.example", SetByDID: "did:plc:bob"},
		FederatedMode{Channel: "#c", Changes: []ModeChange{{Add: true, Mode: "t"}, {Add: true, Mode: "o", Arg: "did:plc:carol"}},
			SetBy: "bob!u@peer.example", SetByDID: "did:plc:bob", AddOnly: true},
		FederatedPin{Channel: "#c", MsgID: "01HXMSG", PinnedBy: "bob!u@peer.example", PinnedByDID: "did:plc:bob"},
		RemotePresence{Peer: "did:web:peer.example", Op: RemoteJoin, Channel: "#c", Member: RemoteMember{Nick: "bob", User: "u", Host: "peer.example", DID: "did:plc:bob"}},
		FederatedKick{Channel: "#c", Target: "s2", By: "bob!u@peer.example", ByDID: "did:plc:bob", Reason: "spam"},
		FederatedInvite{Channel: "#c", Target: "s2", By: "bob!u@peer.example", ByDID: "did:plc:bob"},
		SetReadMarker{DID: "did:plc:alice", Target: "#c", At: 1700000000123},
		SetRealname{Session: "s1", Realname: "Alice A."},
		SetBot{Session: "s1", Bot: true},
		SetInvisible{Session: "s1", Invisible: true},
		ExpireChannels{UnownedAfter: 1000, OwnedAfter: 2000},
		RenameChannel{Session: "s1", Channel: "#c", NewName: "#d", Reason: "typo"},
	}, extraSamples...)
}

// testKey returns a 32-byte public key whose bytes count up from seed.
func testKey(seed byte) []byte {
	k := make([]byte, 32)
	for i := range k {
		k[i] = seed + byte(i)
	}
	return k
}

// knownTypes lists every command type of the core; each module tests its own.
func knownTypes() []CommandType {
	var out []CommandType
	for typ, sp := range commands {
		if sp.module == "" {
			out = append(out, typ)
		}
	}
	slices.Sort(out)
	return out
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	seen := map[CommandType]bool{}
	for _, cmd := range sampleCommands() {
		t.Run(reflect.TypeOf(cmd).Name(), func(t *testing.T) {
			data := mustEncode(t, cmd, "rid-7", "node-b", 1234)
			if got := CommandType(data[0]); got != cmd.CommandType() || data[1] != 0 {
				t.Fatalf("header %x %x, want type %d flags 0", data[0], data[1], cmd.CommandType())
			}
			got, env, ignorable, err := Decode(data)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if ignorable {
				t.Errorf("known command reported ignorable")
			}
			if !reflect.DeepEqual(got, cmd) {
				t.Errorf("round trip:\n got %#v\nwant %#v", got, cmd)
			}
			if env.RequestID != "rid-7" || env.Node != "node-b" || env.Time != 1234 {
				t.Errorf("envelope %+v", env)
			}
			seen[cmd.CommandType()] = true
		})
	}
	for _, typ := range knownTypes() {
		if !seen[typ] {
			t.Errorf("no sample for command type %d", typ)
		}
	}
}

// TestEncodeGolden pins the persisted log format: these bytes are in existing Raft logs.
func TestEncodeGolden(t *testing.T) {
	const env = `{"rid":"r1","node":"n1","ts":1700000000000,"body":`
	golden := []string{
		"\x01\x00" + env + `{"id":"s1","node":"n1","incarnation":"i1","nick":"Alice","user":"al","host":"cloak.example","realname":"Alice A","did":"did:plc:alice","token_hash":"th1","oper":true,"secure":true}}`,
		"\x02\x00" + env + `{"session":"s1","nick":"alice2"}}`,
		"\x03\x00" + env + `{"session":"s1","did":"did:plc:alice","token_hash":"th2","host":"alice.example","oper":true}}`,
		"\x04\x00" + env + `{"session":"s1","reason":"bye"}}`,
		"\x05\x00" + env + `{"session":"s1","channel":"#c","key":"k"}}`,
		"\x06\x00" + env + `{"session":"s1","channel":"#c","reason":"later"}}`,
		"\x07\x00" + env + `{"session":"s1","channel":"#c","target":"s2","reason":"spam"}}`,
		"\x08\x00" + env + `{"session":"s1","channel":"#c","text":"hello \u003cworld\u003e \u0026 \"you\""}}`,
		"\x09\x00" + env + `{"session":"s1","channel":"#c","changes":[{"add":true,"mode":"o","arg":"bob","target":"s2"},{"add":false,"mode":"k"},{"add":true,"mode":"b","arg":"*!*@h"}]}}`,
		"\x0a\x00" + env + `{"session":"s1","channel":"#c","target":"s2"}}`,
		"\x0b\x00" + env + `{"session":"s1","text":"gone"}}`,
		"\x0c\x00" + env + `{"session":"s1"}}`,
		"\x0d\x00" + env + `{"node":"n1","keep":"i2","reason":"restart"}}`,
		"\x0e\x00" + env + `{"did":"did:plc:alice","favorites":["#a","#b"]}}`,
		"\x0f\x00" + env + `{"session":"s1","channel":"#c","msgid":"01HXMSG"}}`,
		"\x10\x00" + env + `{"session":"s1","channel":"#c","msgid":"01HXMSG"}}`,
		"\x11\x00" + env + `{"did":"did:plc:alice","kid":"k1","public_key":"AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=","source":"local-session","purpose":"msgsig","expires_at":1800000000}}`,
		"\x12\x00" + env + `{"did":"did:plc:alice","kid":"k1"}}`,
		"\x13\x00" + env + `{"channel":"#c","text":"from the home","set_by":"bob!u@peer.example","set_by_did":"did:plc:bob"}}`,
		"\x14\x00" + env + `{"channel":"#c","changes":[{"add":true,"mode":"t"},{"add":true,"mode":"o","arg":"did:plc:carol"}],"set_by":"bob!u@peer.example","set_by_did":"did:plc:bob","add_only":true}}`,
		"\x15\x00" + env + `{"channel":"#c","msgid":"01HXMSG","pinned_by":"bob!u@peer.example","pinned_by_did":"did:plc:bob"}}`,
		"\x16\x00" + env + `{"peer":"did:web:peer.example","op":"join","channel":"#c","member":{"peer":"","nick":"bob","user":"u","host":"peer.example","did":"did:plc:bob"}}}`,
		"\x17\x00" + env + `{"channel":"#c","target":"s2","by":"bob!u@peer.example","by_did":"did:plc:bob","reason":"spam"}}`,
		"\x18\x00" + env + `{"channel":"#c","target":"s2","by":"bob!u@peer.example","by_did":"did:plc:bob"}}`,
		"\x19\x00" + env + `{"did":"did:plc:alice","target":"#c","at":1700000000123}}`,
		"\x1a\x00" + env + `{"session":"s1","realname":"Alice A."}}`,
		"\x1b\x00" + env + `{"session":"s1","bot":true}}`,
		"\x50\x00" + env + `{"session":"s1","invisible":true}}`,
		"\x20\x00" + env + `{"unowned_after_ms":1000,"owned_after_ms":2000}}`,
		"\x23\x00" + env + `{"session":"s1","channel":"#c","new_name":"#d","reason":"typo"}}`,
	}
	golden = append(golden, extraGolden...)
	samples := sampleCommands()
	if len(samples) != len(golden) {
		t.Fatalf("%d samples, %d golden entries", len(samples), len(golden))
	}
	for i, cmd := range samples {
		got := mustEncode(t, cmd, "r1", "n1", 1_700_000_000_000)
		if string(got) != golden[i] {
			t.Errorf("%T encoding drifted:\n got %q\nwant %q", cmd, got, golden[i])
		}
		// Old entries must keep decoding to the same command.
		dec, _, _, err := Decode([]byte(golden[i]))
		if err != nil || !reflect.DeepEqual(dec, cmd) {
			t.Errorf("%T golden decodes to %#v, %v", cmd, dec, err)
		}
	}
}

func TestDecodeUnknownType(t *testing.T) {
	body := []byte(`{"rid":"r","node":"n","ts":1,"body":{"x":1}}`)
	tests := []struct {
		name          string
		typ, flags    byte
		wantIgnorable bool
	}{
		{"mandatory", 200, 0, false},
		{"ignorable", 200, flagIgnorable, true},
		{"ignorable with other flags", 0, flagIgnorable | 0x80, true},
		{"other flags only", 250, 0x02, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := append([]byte{tc.typ, tc.flags}, body...)
			cmd, env, ignorable, err := Decode(data)
			if !errors.Is(err, ErrUnknownCommand) {
				t.Fatalf("err = %v, want ErrUnknownCommand", err)
			}
			if cmd != nil || ignorable != tc.wantIgnorable || env.RequestID != "r" {
				t.Errorf("cmd %v ignorable %v env %+v", cmd, ignorable, env)
			}
		})
	}
}

func TestDecodeGarbage(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"nil", nil},
		{"one byte", []byte{5}},
		{"header only", []byte{5, 0}},
		{"not json", []byte("\x05\x00hello")},
		{"truncated", []byte("\x05\x00{\"rid\":\"r\",\"body\":{\"session\"")},
		{"trailing garbage", []byte("\x05\x00{\"body\":{}}x")},
		{"no body", []byte("\x05\x00{\"rid\":\"r\"}")},
		{"body wrong type", []byte("\x05\x00{\"body\":7}")},
		{"field wrong type", []byte("\x05\x00{\"body\":{\"session\":7}}")},
		{"envelope array", []byte("\x05\x00[1,2]")},
		{"changes not a list", []byte("\x09\x00{\"body\":{\"changes\":\"o\"}}")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd, _, ignorable, err := Decode(tc.data)
			if err == nil {
				t.Fatalf("Decode(%q) = %#v, want an error", tc.data, cmd)
			}
			if errors.Is(err, ErrUnknownCommand) || ignorable || cmd != nil {
				t.Errorf("err %v ignorable %v cmd %v", err, ignorable, cmd)
			}
		})
	}
}

func TestApplyUndecodable(t *testing.T) {
	env := []byte(`{"rid":"r-x","node":"n","ts":1,"body":{}}`)
	tests := []struct {
		name string
		data []byte
		want Code
	}{
		{"garbage", []byte("\x05\x00{{{"), ErrInvalid},
		{"empty", nil, ErrInvalid},
		{"unknown ignorable", append([]byte{99, flagIgnorable}, env...), NoChange},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.mustOK(world()...)
			h.takeEvents()
			before := stateJSON(t, h.m)
			if got := h.applyRaw(tc.data); got.Code != tc.want {
				t.Errorf("code %v, want %v", got.Code, tc.want)
			}
			if after := stateJSON(t, h.m); after != before {
				t.Errorf("state changed by an undecodable entry")
			}
			h.read(func(st *State) {
				if st.index != h.index {
					t.Errorf("index %d, want %d", st.index, h.index)
				}
				if _, ok := st.requests["r-x"]; ok {
					t.Errorf("undecodable entry's request id remembered")
				}
			})
			if len(h.events) != 0 {
				t.Errorf("events %v", h.events)
			}
		})
	}
}

func TestCodeString(t *testing.T) {
	// Codes are numbered in blocks, so the table may have gaps between blocks.
	names := map[string]bool{}
	for c := range codeNames {
		s := c.String()
		if s == "" || s == "code-unknown" || names[s] {
			t.Errorf("code %d has name %q", c, s)
		}
		names[s] = true
	}
	for _, tc := range []struct {
		c    Code
		want string
	}{{OK, "ok"}, {ErrNickOwned, "nick-owned"}, {ErrListFull, "list-full"}, {NoChange, "no-change"},
		{ErrNotPinned, "not-pinned"}, {Code(1000), "code-unknown"}} {
		if got := tc.c.String(); got != tc.want {
			t.Errorf("Code(%d).String() = %q, want %q", tc.c, got, tc.want)
		}
	}
}

// TestCodeValuesPinned guards the numeric values persisted in snapshots (Requests results).
func TestCodeValuesPinned(t *testing.T) {
	for c, want := range map[Code]uint16{OK: 0, ErrNickOwned: 3, ErrChanOpNeeded: 9, ErrInvalid: 17, NoChange: 18,
		ErrAlreadyPinned: 19, ErrNotPinned: 20, ErrKeyEnded: 21} {
		if uint16(c) != want {
			t.Errorf("%v = %d, want %d", c, c, want)
		}
	}
	b, err := json.Marshal(Result{Code: ErrBanned})
	if err != nil || !bytes.Equal(b, []byte(`{"code":10}`)) {
		t.Errorf("Result encodes as %s, %v", b, err)
	}
}

// TestCommandTable: every registered type decodes to a command that reports that type, under a
// distinct name, and the persisted numbers stay where they are.
func TestCommandTable(t *testing.T) {
	names := map[string]bool{}
	for _, typ := range knownTypes() {
		sp := commands[typ]
		cmd, err := sp.decode([]byte(`{}`))
		if err != nil {
			t.Fatalf("type %d (%s): decode {}: %v", typ, sp.name, err)
		}
		if cmd.CommandType() != typ {
			t.Errorf("type %d (%s) decodes to %T of type %d", typ, sp.name, cmd, cmd.CommandType())
		}
		if sp.name == "" || names[sp.name] {
			t.Errorf("type %d has name %q", typ, sp.name)
		}
		names[sp.name] = true
	}
	for typ, want := range map[CommandType]string{1: "register-session", 5: "join", 9: "mode", 17: "register-key",
		24: "federated-invite"} {
		if got := commands[typ].name; got != want {
			t.Errorf("type %d is %q, want %q", typ, got, want)
		}
	}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "twice") {
				t.Errorf("registering a taken number: recover() = %v", r)
			}
		}()
		registerCommands(map[CommandType]CommandSpec{TypeJoin: spec("join-again", (*Applier).join)})
	}()
}

// TestApplyUnknownMandatoryStops: an entry of a command type this build does not know (and that
// is not marked ignorable) stops the node rather than being answered and skipped.
func TestApplyUnknownMandatoryStops(t *testing.T) {
	h := newHarness(t)
	h.mustOK(world()...)
	env := []byte(`{"rid":"r-x","node":"n","ts":1,"body":{}}`)
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), "unknown command type 99") || !strings.Contains(fmt.Sprint(r), "upgrade") {
			t.Fatalf("recover() = %v, want a panic naming the type and the fix", r)
		}
	}()
	h.applyRaw(append([]byte{99, 0}, env...))
	t.Fatalf("Apply returned for an unknown mandatory command")
}
