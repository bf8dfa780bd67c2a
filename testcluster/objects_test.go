package testcluster

import (
	"bytes"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
)

func objWrite(client int, object, actor, arg, result string, call, ret int) ObjectOp {
	return ObjectOp{Client: client, Object: object, Actor: actor, Kind: WriteOp, Arg: arg, Result: result, Call: ms(call), Return: ms(ret), Outcome: Done}
}

func objUnknown(client int, object, actor, arg string, call int) ObjectOp {
	return ObjectOp{Client: client, Object: object, Actor: actor, Kind: WriteOp, Arg: arg, Call: ms(call), Outcome: Unknown}
}

func objRead(client int, object, value string, call, ret int) ObjectOp {
	return ObjectOp{Client: client, Object: object, Kind: ReadOp, Result: value, Call: ms(call), Return: ms(ret), Outcome: Done}
}

func TestCheckNicks(t *testing.T) {
	tests := []struct {
		name    string
		ops     []ObjectOp
		want    porcupine.CheckResult
		illegal []string
	}{
		{
			name: "claim, refused claim, release, claim by another",
			ops: []ObjectOp{
				objWrite(1, "pool0", "a", nickClaim, answerOK, 0, 10),
				objRead(2, "pool0", "a", 12, 15),
				objWrite(2, "pool0", "b", nickClaim, answerInUse, 20, 30),
				objWrite(1, "pool0", "a", nickRelease, answerOK, 40, 50),
				objRead(2, "pool0", "", 52, 55),
				objWrite(2, "pool0", "b", nickClaim, answerOK, 60, 70),
				objRead(1, "pool0", "b", 80, 90),
			},
			want: porcupine.Ok,
		},
		{
			name: "two claims of a free nick cannot both succeed",
			ops: []ObjectOp{
				objWrite(1, "pool0", "a", nickClaim, answerOK, 0, 10),
				objWrite(2, "pool0", "b", nickClaim, answerOK, 20, 30),
			},
			want: porcupine.Illegal, illegal: []string{"pool0"},
		},
		{
			name: "in use on a nick nobody holds",
			ops:  []ObjectOp{objWrite(1, "pool1", "a", nickClaim, answerInUse, 0, 10)},
			want: porcupine.Illegal, illegal: []string{"pool1"},
		},
		{
			name: "a stale read after an acknowledged claim",
			ops: []ObjectOp{
				objWrite(1, "pool0", "a", nickClaim, answerOK, 0, 10),
				objRead(2, "pool0", "", 20, 30),
				objWrite(3, "pool1", "c", nickClaim, answerOK, 0, 10),
			},
			want: porcupine.Illegal, illegal: []string{"pool0"},
		},
		{
			name: "an unknown claim may take effect late or never",
			ops: []ObjectOp{
				objUnknown(1, "pool0", "a", nickClaim, 0),
				objRead(2, "pool0", "", 20, 30),
				objRead(2, "pool0", "a", 40, 50),
				objUnknown(1, "pool0", "a", nickRelease, 5),
				objRead(2, "pool0", "", 60, 70),
			},
			want: porcupine.Ok,
		},
		{
			name: "a session end frees the nick only after it began",
			ops: []ObjectOp{
				objWrite(1, "pool0", "a", nickClaim, answerOK, 0, 10),
				objRead(2, "pool0", "", 20, 30),
				objUnknown(1, "pool0", "a", nickRelease, 40),
			},
			want: porcupine.Illegal, illegal: []string{"pool0"},
		},
		{
			name: "release of a nick held by someone else",
			ops: []ObjectOp{
				objWrite(1, "pool0", "a", nickClaim, answerOK, 0, 10),
				objWrite(2, "pool0", "b", nickRelease, answerOK, 20, 30),
			},
			want: porcupine.Illegal, illegal: []string{"pool0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := CheckNicks(tt.ops, 0)
			if v.Result != tt.want {
				t.Fatalf("result = %s, want %s", v.Result, tt.want)
			}
			if strings.Join(v.Illegal, ",") != strings.Join(tt.illegal, ",") {
				t.Errorf("illegal objects = %v, want %v", v.Illegal, tt.illegal)
			}
		})
	}
}

func TestCheckModes(t *testing.T) {
	tests := []struct {
		name string
		ops  []ObjectOp
		want porcupine.CheckResult
	}{
		{
			name: "setup, toggles and reads",
			ops: []ObjectOp{
				objWrite(0, "#m", "s", "+nt-mk", answerOK, 0, 5),
				objRead(1, "#m", "+nt", 6, 8),
				objWrite(1, "#m", "o", "+m", answerOK, 10, 20),
				objWrite(2, "#m", "o", "+k k1", answerOK, 25, 30),
				objRead(2, "#m", "+ntmk k1", 35, 40),
				objWrite(1, "#m", "o", "-n", answerOK, 45, 50),
				objWrite(2, "#m", "o", "-k", answerOK, 55, 60),
				objWrite(2, "#m", "o", "-k", answerOK, 61, 62),
				objRead(1, "#m", "+tm", 65, 70),
			},
			want: porcupine.Ok,
		},
		{
			name: "concurrent key changes: either order",
			ops: []ObjectOp{
				objWrite(0, "#m", "s", "+nt-mk", answerOK, 0, 5),
				objWrite(1, "#m", "o", "+k k1", answerOK, 10, 30),
				objWrite(2, "#m", "o", "+k k2", answerOK, 12, 28),
				objRead(1, "#m", "+ntk k1", 40, 45),
			},
			want: porcupine.Ok,
		},
		{
			name: "a lost mode change",
			ops: []ObjectOp{
				objWrite(0, "#m", "s", "+nt-mk", answerOK, 0, 5),
				objWrite(1, "#m", "o", "+m", answerOK, 10, 20),
				objRead(2, "#m", "+nt", 30, 40),
			},
			want: porcupine.Illegal,
		},
		{
			name: "an unknown change seen applied",
			ops: []ObjectOp{
				objWrite(0, "#m", "s", "+nt-mk", answerOK, 0, 5),
				objUnknown(1, "#m", "o", "-t", 10),
				objRead(2, "#m", "+nt", 30, 40),
				objRead(2, "#m", "+n", 50, 60),
			},
			want: porcupine.Ok,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if v := CheckModes(tt.ops, 0); v.Result != tt.want {
				t.Fatalf("result = %s, want %s", v.Result, tt.want)
			}
		})
	}
}

func TestCheckPins(t *testing.T) {
	tests := []struct {
		name string
		ops  []ObjectOp
		want porcupine.CheckResult
	}{
		{
			name: "pins newest first, answers for repeats",
			ops: []ObjectOp{
				objWrite(1, "#p", "o", "pin m1", answerOK, 0, 10),
				objWrite(2, "#p", "o", "pin m2", answerOK, 15, 20),
				objWrite(1, "#p", "o", "pin m1", answerAlreadyPinned, 25, 30),
				objRead(2, "#p", "m2,m1", 35, 40),
				objWrite(2, "#p", "o", "unpin m2", answerOK, 45, 50),
				objWrite(1, "#p", "o", "unpin m2", answerNotPinned, 55, 60),
				objRead(1, "#p", "m1", 65, 70),
			},
			want: porcupine.Ok,
		},
		{
			name: "wrong order",
			ops: []ObjectOp{
				objWrite(1, "#p", "o", "pin m1", answerOK, 0, 10),
				objWrite(2, "#p", "o", "pin m2", answerOK, 15, 20),
				objRead(2, "#p", "m1,m2", 35, 40),
			},
			want: porcupine.Illegal,
		},
		{
			name: "already pinned when it was not",
			ops:  []ObjectOp{objWrite(1, "#p", "o", "pin m1", answerAlreadyPinned, 0, 10)},
			want: porcupine.Illegal,
		},
		{
			name: "concurrent pins: either order, and the answer follows it",
			ops: []ObjectOp{
				objWrite(1, "#p", "o", "pin m1", answerOK, 0, 20),
				objWrite(2, "#p", "o", "pin m1", answerAlreadyPinned, 5, 25),
				objRead(1, "#p", "m1", 30, 35),
			},
			want: porcupine.Ok,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if v := CheckPins(tt.ops, 0); v.Result != tt.want {
				t.Fatalf("result = %s, want %s", v.Result, tt.want)
			}
		})
	}
}

func TestObjectVerdictReport(t *testing.T) {
	rep := &Report{
		Topics: CheckTopics(nil, nil, 0),
		Nicks:  CheckNicks([]ObjectOp{objWrite(1, "pool0", "a", nickClaim, answerOK, 0, 10), objWrite(2, "pool0", "b", nickClaim, answerOK, 20, 30)}, 0),
		Modes:  CheckModes(nil, 0),
		Pins:   CheckPins([]ObjectOp{objWrite(1, "#p", "o", "pin m1", answerOK, 0, 10), objRead(1, "#p", "m1", 20, 30)}, 0),
	}
	rep.HashesEqual = true
	if rep.Passed() {
		t.Fatal("a run whose nick history is not linearizable passed")
	}
	failures := strings.Join(rep.Failures(), "\n")
	if !strings.Contains(failures, "nick history is not linearizable (pool0)") {
		t.Errorf("failures = %q", failures)
	}
	var table bytes.Buffer
	rep.WriteTable(&table)
	flat := strings.Join(strings.Fields(table.String()), " ")
	for _, want := range []string{"topic ops linearizable yes", "nick ops linearizable no (2 writes acknowledged (ok 2), 0 outcome unknown, 0 fenced reads on 1 nicks)",
		"pin ops linearizable yes (1 writes acknowledged (ok 1), 0 outcome unknown, 1 fenced reads on 1 channels)"} {
		if !strings.Contains(flat, want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	rep.Nicks = CheckNicks(nil, 0)
	if !rep.Passed() {
		t.Errorf("failures: %v", rep.Failures())
	}
	var viz bytes.Buffer
	if err := rep.Pins.WriteVisualization(&viz); err != nil || viz.Len() == 0 {
		t.Errorf("visualization: %d bytes, %v", viz.Len(), err)
	}
}

func TestParseModeReply(t *testing.T) {
	tests := []struct{ modes, key, want string }{
		{"+nt", "", "+nt"},
		{"+ntk", "secret", "+ntk secret"},
		{"+k", "", "+k "},
		{"+tn", "", "+nt"},
		{"+ntmx", "ignored", "+ntm"},
		{"", "", "+"},
	}
	for _, tt := range tests {
		if got := parseModeReply(tt.modes, tt.key); got != tt.want {
			t.Errorf("parseModeReply(%q, %q) = %q, want %q", tt.modes, tt.key, got, tt.want)
		}
	}
}

func TestApplyModeChanges(t *testing.T) {
	tests := []struct {
		modes, key, changes string
		args                []string
		want                string
	}{
		{"+", "", "+nt-mk", nil, "+nt"},
		{"+nt", "", "+k", []string{"k1"}, "+ntk k1"},
		{"+ntk", "k1", "+k", []string{"k2"}, "+ntk k2"},
		{"+ntk", "k1", "-k", nil, "+nt"},
		{"+ntm", "", "-m+i", nil, "+nti"},
		{"+nt", "", "+k", nil, "+nt"}, // +k without a key changes nothing
	}
	for _, tt := range tests {
		if got := applyModeChanges(tt.modes, tt.key, tt.changes, tt.args); got != tt.want {
			t.Errorf("applyModeChanges(%q, %q, %q, %q) = %q, want %q", tt.modes, tt.key, tt.changes, tt.args, got, tt.want)
		}
	}
}

func TestParsePinsLine(t *testing.T) {
	tests := []struct {
		text      string
		msgid     string
		end, isOK bool
	}{
		{"[#pin0] 01HXYZ pinned by o0n1c1 at 2026-01-01T00:00:00Z: <setupobj> pin me", "01HXYZ", false, true},
		{"[#pin0] 3 pinned message(s)", "", true, true},
		{"[#pin1] 01HXYZ pinned by x", "", false, false},
		{"Message 01HXYZ is already pinned in #pin0", "", false, false},
		{"[#pin0] ", "", false, false},
	}
	for _, tt := range tests {
		msgid, end, ok := parsePinsLine("#pin0", tt.text)
		if msgid != tt.msgid || end != tt.end || ok != tt.isOK {
			t.Errorf("parsePinsLine(%q) = %q, %v, %v; want %q, %v, %v", tt.text, msgid, end, ok, tt.msgid, tt.end, tt.isOK)
		}
	}
}

func FuzzParsePinsLine(f *testing.F) {
	f.Add("#pin0", "[#pin0] 01HXYZ pinned by o at t: <a> b")
	f.Add("#pin0", "[#pin0] 0 pinned message(s)")
	f.Add("#x", "[#x]  pinned by ")
	f.Fuzz(func(t *testing.T, channel, text string) {
		msgid, end, ok := parsePinsLine(channel, text)
		if !ok && (msgid != "" || end) {
			t.Fatalf("rejected line gave %q, %v", msgid, end)
		}
		if ok && !end && (msgid == "" || strings.Contains(msgid, " ")) {
			t.Fatalf("pin line gave msgid %q", msgid)
		}
	})
}

func FuzzModeState(f *testing.F) {
	f.Add("+ntk", "key", "+m-k+k", "k2")
	f.Add("", "", "-+", "")
	f.Fuzz(func(t *testing.T, modes, key, changes, arg string) {
		state := parseModeReply(modes, key)
		m, k, _ := strings.Cut(state, " ")
		next := applyModeChanges(m, k, changes, strings.Fields(arg))
		// The canonical form is a fixed point of parsing.
		nm, nk, _ := strings.Cut(next, " ")
		if again := parseModeReply(nm, nk); again != next {
			t.Fatalf("state %q parses back as %q", next, again)
		}
	})
}
