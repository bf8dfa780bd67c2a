package fsm

import (
	"bytes"
	"errors"
	"reflect"
	"strconv"
	"testing"
)

func fuzzSeedEntries(f *testing.F) [][]byte {
	var seeds [][]byte
	for i, cmd := range sampleCommands() {
		seeds = append(seeds, mustEncode(f, cmd, "r"+strconv.Itoa(i), "n1", int64(i)))
	}
	return seeds
}

func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeedEntries(f) {
		f.Add(s)
	}
	f.Add([]byte{})
	f.Add([]byte{9, 0})
	f.Add([]byte("\x09\x00{\"body\":{\"changes\":null}}"))
	f.Add([]byte("\x0e\x00{\"body\":{\"favorites\":[]}}"))
	f.Add([]byte("\xc8\x01{\"rid\":\"r\",\"body\":{}}"))
	f.Add([]byte("\x05\x00{\"body\":{\"session\":\"\xff\xfe\"}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cmd, env, ignorable, err := Decode(data)
		if err != nil {
			if cmd != nil {
				t.Fatalf("error %v with command %#v", err, cmd)
			}
			if ignorable && !errors.Is(err, ErrUnknownCommand) {
				t.Fatalf("ignorable with error %v", err)
			}
			return
		}
		if cmd == nil || ignorable {
			t.Fatalf("decoded nil command or ignorable known command")
		}
		if cmd.CommandType() != CommandType(data[0]) {
			t.Fatalf("type byte %d decoded as %T", data[0], cmd)
		}
		// What decodes must re-encode to something that decodes to the same command.
		again, err := Encode(cmd, env.RequestID, env.Node, env.Time)
		if err != nil {
			t.Fatalf("re-encode %#v: %v", cmd, err)
		}
		cmd2, env2, _, err := Decode(again)
		if err != nil || !reflect.DeepEqual(cmd, cmd2) || env2.RequestID != env.RequestID || env2.Time != env.Time {
			t.Fatalf("unstable round trip:\n%#v\n%#v\n%v", cmd, cmd2, err)
		}
	})
}

// Bounds of one FuzzApply input. The minimizer's cost grows with the square of the input length
// (and it may run for a minute per new input by default), so inputs stay short: a command takes a
// handful of bytes, and a few dozen commands reach channels with modes, bans, invites and keys.
const (
	maxFuzzInput    = 160
	maxFuzzCommands = 48
)

// fuzzLog turns the fuzzer's bytes into a log: each entry is a command drawn by the structured
// generator (so that a few bytes reach deep states: channels with modes, bans, invites, keys),
// stamped with a time and a request id drawn from a small set (so retries happen). Now and then
// an entry is mangled (cut short: an undecodable entry) or replaced by an unknown command marked
// ignorable. An unknown mandatory command stops the node by design and is never drawn.
func fuzzLog(tb testing.TB, data []byte) [][]byte {
	c := &byteChooser{data: data}
	var out [][]byte
	ts := int64(1_700_000_000_000)
	for len(c.data) > 0 && len(out) < maxFuzzCommands {
		ts += int64(c.intn(4)) * 600_000 // up to half an hour later: key expiries pass
		entry := mustEncode(tb, randomCommand(c), "g"+strconv.Itoa(c.intn(32)), pick(c, genNodes), ts)
		switch c.intn(16) {
		case 0:
			entry = entry[:2+c.intn(len(entry)-2)]
		case 1:
			entry = append([]byte{byte(200 + c.intn(50)), flagIgnorable}, entry[2:]...)
		}
		out = append(out, entry)
	}
	return out
}

// FuzzApply applies the log fuzzLog builds from the fuzzer's bytes (at most maxFuzzInput of them).
// Nothing may panic, every answer is a Result, the state stays self-consistent, and a snapshot
// restores to the same state (TestDeterminism checks that replicas agree).
func FuzzApply(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 5, 3, 7, 13, 2, 9, 4, 11, 6, 8})
	f.Add([]byte("\x00\x00\x00\x00\x01\x00\x00\x05\x00\x00\x00\x00\x0d\x00\x00\x02\x00\x01\x05\x01\x00"))
	f.Add(bytes.Repeat([]byte{0, 1, 5, 3, 7, 13, 2, 9, 4, 11, 6, 8, 26, 27, 22, 29}, 8))
	for i := range 4 {
		seed := make([]byte, 96)
		for j := range seed {
			seed[j] = byte((j*31 + i*7) ^ (j >> 2))
		}
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			return
		}
		entries := fuzzLog(t, data)
		m := New(quietLogger())
		m.SetLocalNode("node-a")
		for i, entry := range entries {
			if _, ok := m.Apply(uint64(i+1), entry).(Result); !ok {
				t.Fatalf("Apply returned a non-Result")
			}
		}
		m.Read(func(st *State) {
			if err := checkInvariants(st); err != nil {
				t.Fatalf("%v", err)
			}
			if st.index != uint64(len(entries)) {
				t.Fatalf("index %d, want %d", st.index, len(entries))
			}
		})
		snap := snapshotBytes(t, m)
		restored := New(quietLogger())
		restored.SetLocalNode("node-a")
		if err := restored.Restore(bytes.NewReader(snap)); err != nil {
			t.Fatalf("restore: %v", err)
		}
		restored.Read(func(st *State) {
			if err := checkLocalIndex(st); err != nil {
				t.Fatalf("after restore: %v", err)
			}
		})
		if again := snapshotBytes(t, restored); !bytes.Equal(again, snap) {
			t.Fatalf("snapshot round trip changed the state:\n%s\n%s", snap, again)
		}
	})
}

// refGlob is a plain dynamic-programming glob over bytes, the reference for glob.
func refGlob(p, s string) bool {
	prev := make([]bool, len(s)+1)
	prev[0] = true
	for i := 1; i <= len(p); i++ {
		cur := make([]bool, len(s)+1)
		if p[i-1] == '*' {
			cur[0] = prev[0]
		}
		for j := 1; j <= len(s); j++ {
			switch p[i-1] {
			case '*':
				cur[j] = prev[j] || cur[j-1]
			case '?':
				cur[j] = prev[j-1]
			default:
				cur[j] = prev[j-1] && p[i-1] == s[j-1]
			}
		}
		prev = cur
	}
	return prev[len(s)]
}

func FuzzMatchMask(f *testing.F) {
	f.Add("*!*@*", "alice!u@h", "")
	f.Add("*", "*a", "")
	f.Add("a*", "a*b", "")
	f.Add("did:plc:x", "n!u@h", "did:plc:x")
	f.Add("did:*", "n!u@h", "did:plc:x")
	f.Add("A?C*!*@*.EXAMPLE", "abc!u@x.example", "")
	f.Add("*a*a*a*b", "aaaaaaaaaaaaaaaaaaaa", "")
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, mask, hostmask, did string) {
		if len(mask) > 300 || len(hostmask) > 300 {
			return
		}
		got := MatchMask(mask, hostmask, did)
		if !MatchMask("*", hostmask, did) {
			t.Fatalf("* does not match %q", hostmask)
		}
		if !MatchMask("*!*@*", "n!"+hostmask+"@h", did) {
			t.Fatalf("*!*@* does not match a hostmask with user %q", hostmask)
		}
		var want bool
		if len(mask) >= 4 && mask[:4] == "did:" {
			want = did != "" && mask == did
		} else {
			want = refGlob(Fold(mask), Fold(hostmask))
		}
		if got != want {
			t.Fatalf("MatchMask(%q, %q, %q) = %v, reference says %v", mask, hostmask, did, got, want)
		}
		if g := glob(mask, hostmask); g != refGlob(mask, hostmask) {
			t.Fatalf("glob(%q, %q) = %v", mask, hostmask, g)
		}
		if !glob(hostmask, hostmask) && !bytes.ContainsAny([]byte(hostmask), "*?") {
			t.Fatalf("literal %q does not match itself", hostmask)
		}
	})
}

func FuzzFold(f *testing.F) {
	for _, s := range []string{"", "ABC", "#Chan", "ÉA", "İX", "\xffZ", "[]\\~"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Fold(s)
		if len(got) != len(s) {
			t.Fatalf("Fold(%q) = %q changed the length", s, got)
		}
		for i := 0; i < len(s); i++ {
			want := s[i]
			if want >= 'A' && want <= 'Z' {
				want += 'a' - 'A'
			}
			if got[i] != want {
				t.Fatalf("Fold(%q) = %q: byte %d is %q, want %q", s, got, i, got[i], want)
			}
		}
		if Fold(got) != got {
			t.Fatalf("Fold is not idempotent on %q", s)
		}
	})
}
