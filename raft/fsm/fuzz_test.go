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
		if cmd.commandType() != CommandType(data[0]) {
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

// FuzzApply feeds the fuzzer's bytes to a machine three ways: as one raw entry, as raw entries
// split at 0xFF (a byte valid JSON never contains), and as choices for the command generator,
// which reaches deep states that random bytes rarely would. Nothing may panic, and the state must
// stay self-consistent and survive a snapshot round trip.
func FuzzApply(f *testing.F) {
	seeds := fuzzSeedEntries(f)
	f.Add(bytes.Join(seeds, []byte{0xff}))
	f.Add(bytes.Join([][]byte{
		mustEncode(f, reg("s1", "one", didAlice), "a", "n", 1),
		mustEncode(f, Join{Session: "s1", Channel: "#c"}, "b", "n", 2),
		mustEncode(f, modes("s1", "#c", add("b", "*!*@*"), add("i", ""), addTo("o", "s1")), "c", "n", 3),
		mustEncode(f, EndSession{Session: "s1"}, "d", "n", 4),
	}, []byte{0xff}))
	f.Add([]byte("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17"))
	f.Add(bytes.Repeat([]byte{0, 1, 5, 3, 7, 13, 2, 9, 4, 11, 6, 8}, 20))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		// Keep inputs small: the minimizer's cost grows with the square of the input length.
		// A long fuzzing run still stalls while minimizing; -fuzzminimizetime=5s shortens that.
		if len(data) > 1024 {
			return
		}
		m := New(quietLogger())
		var index uint64
		apply := func(entry []byte) {
			index++
			if _, ok := m.Apply(index, entry).(Result); !ok {
				t.Fatalf("Apply returned a non-Result")
			}
		}
		apply(data)
		for _, part := range bytes.Split(data, []byte{0xff}) {
			apply(part)
		}
		c := &byteChooser{data: data}
		for i := 0; len(c.data) > 0 && i < 100; i++ {
			cmd := randomCommand(c)
			rid := "g" + strconv.Itoa(c.intn(64)) // few ids, so retries happen
			apply(mustEncode(t, cmd, rid, "node-a", int64(i)))
		}
		m.Read(func(st *State) {
			if err := checkInvariants(st); err != nil {
				t.Fatalf("%v", err)
			}
			if st.Index != index {
				t.Fatalf("index %d, want %d", st.Index, index)
			}
		})
		restored := New(quietLogger())
		if err := restored.Restore(bytes.NewReader(snapshotBytes(t, m))); err != nil {
			t.Fatalf("restore: %v", err)
		}
		if restored.Hash() != m.Hash() {
			t.Fatalf("snapshot round trip changed the hash")
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
