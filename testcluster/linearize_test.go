package testcluster

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func write(client int, ch, value string, call, ret int) TopicOp {
	return TopicOp{Client: client, Channel: ch, Kind: WriteOp, Value: value, Call: ms(call), Return: ms(ret), Outcome: Done}
}

func unknownWrite(client int, ch, value string, call int) TopicOp {
	return TopicOp{Client: client, Channel: ch, Kind: WriteOp, Value: value, Call: ms(call), Outcome: Unknown}
}

func read(client int, ch, value string, call, ret int) TopicOp {
	return TopicOp{Client: client, Channel: ch, Kind: ReadOp, Value: value, Call: ms(call), Return: ms(ret), Outcome: Done}
}

func TestCheckTopics(t *testing.T) {
	tests := []struct {
		name      string
		ops       []TopicOp
		echoes    map[string]map[string]time.Duration
		want      porcupine.CheckResult
		lost      []string // values of the writes reported lost
		phantoms  int
		resolved  int
		unknown   int
		checkedWr int
	}{
		{
			name: "sequential writes and reads",
			ops: []TopicOp{
				write(0, "#a", "a1", 0, 10), read(1, "#a", "a1", 20, 30),
				write(1, "#a", "a2", 40, 50), read(0, "#a", "a2", 60, 70),
			},
			want: porcupine.Ok, checkedWr: 2,
		},
		{
			name: "read before any write sees no topic",
			ops:  []TopicOp{read(0, "#a", "", 0, 5), write(1, "#a", "a1", 10, 20)},
			want: porcupine.Ok, checkedWr: 1,
		},
		{
			name: "a read concurrent with a write may see either value",
			ops: []TopicOp{
				write(0, "#a", "a1", 0, 10), write(1, "#a", "a2", 20, 60),
				read(2, "#a", "a1", 25, 30), read(3, "#a", "a2", 35, 40), read(2, "#a", "a2", 70, 80),
			},
			want: porcupine.Ok, checkedWr: 2,
		},
		{
			name: "a stale read after an acknowledged write: the write is lost",
			ops: []TopicOp{
				write(0, "#a", "a1", 0, 10), write(1, "#a", "a2", 20, 30), read(2, "#a", "a1", 40, 50),
			},
			want: porcupine.Illegal, lost: []string{"a2"}, checkedWr: 2,
		},
		{
			name: "no topic after an acknowledged write: every earlier write is lost",
			ops: []TopicOp{
				write(0, "#a", "a1", 0, 10), write(1, "#a", "a2", 20, 30), read(2, "#a", "", 40, 50),
			},
			want: porcupine.Illegal, lost: []string{"a1", "a2"}, checkedWr: 2,
		},
		{
			name: "reads going back in time while a write is in flight: not linearizable, nothing acknowledged lost",
			ops: []TopicOp{
				write(0, "#a", "a1", 0, 10), write(1, "#a", "a2", 20, 100),
				read(2, "#a", "a2", 30, 40), read(2, "#a", "a1", 50, 60),
			},
			want: porcupine.Illegal, checkedWr: 2,
		},
		{
			name: "an unknown write seen by a later read counts as applied by then",
			ops: []TopicOp{
				write(0, "#a", "a1", 0, 10), unknownWrite(1, "#a", "a2", 20),
				read(2, "#a", "a2", 100, 110), read(0, "#a", "a2", 120, 130),
			},
			want: porcupine.Ok, resolved: 1, unknown: 1, checkedWr: 2,
		},
		{
			name: "an unknown write seen applied by an echo cannot be unseen",
			ops: []TopicOp{
				write(0, "#a", "a1", 0, 10), unknownWrite(1, "#a", "a2", 20),
				read(2, "#a", "a1", 100, 110),
			},
			echoes: map[string]map[string]time.Duration{"#a": {"a2": ms(50)}},
			want:   porcupine.Illegal, resolved: 1, unknown: 1, checkedWr: 2,
		},
		{
			name: "an unknown write nobody saw is left out",
			ops: []TopicOp{
				write(0, "#a", "a1", 0, 10), unknownWrite(1, "#a", "a2", 20), read(2, "#a", "a1", 100, 110),
			},
			want: porcupine.Ok, unknown: 1, checkedWr: 1,
		},
		{
			name: "a value nobody wrote",
			ops:  []TopicOp{write(0, "#a", "a1", 0, 10), read(1, "#a", "zz", 20, 30)},
			want: porcupine.Illegal, phantoms: 1, checkedWr: 1,
		},
		{
			name: "channels are independent registers",
			ops: []TopicOp{
				write(0, "#a", "a1", 0, 10), write(1, "#b", "b1", 0, 10),
				read(2, "#a", "a1", 20, 30), read(2, "#b", "b1", 20, 30),
			},
			want: porcupine.Ok, checkedWr: 2,
		},
		{
			name: "a stale read on one channel fails the history",
			ops: []TopicOp{
				write(0, "#a", "a1", 0, 10), write(1, "#b", "b1", 0, 10), write(1, "#b", "b2", 20, 30),
				read(2, "#a", "a1", 40, 50), read(2, "#b", "b1", 40, 50),
			},
			want: porcupine.Illegal, lost: []string{"b2"}, checkedWr: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := CheckTopics(tt.ops, tt.echoes, 10*time.Second)
			if v.Result != tt.want {
				t.Errorf("result = %v, want %v", v.Result, tt.want)
			}
			var lost []string
			for _, l := range v.LostWrites {
				lost = append(lost, l.Write.Value)
			}
			if strings.Join(lost, ",") != strings.Join(tt.lost, ",") {
				t.Errorf("lost writes = %v, want %v", lost, tt.lost)
			}
			if len(v.PhantomReads) != tt.phantoms {
				t.Errorf("phantom reads = %d, want %d", len(v.PhantomReads), tt.phantoms)
			}
			if v.ResolvedUnknown != tt.resolved || v.UnknownWrites != tt.unknown {
				t.Errorf("unknown writes = %d (resolved %d), want %d (%d)", v.UnknownWrites, v.ResolvedUnknown, tt.unknown, tt.resolved)
			}
			if got := v.Writes + v.ResolvedUnknown; got != tt.checkedWr {
				t.Errorf("checked writes = %d, want %d", got, tt.checkedWr)
			}
		})
	}
}

func TestTopicVerdictVisualization(t *testing.T) {
	v := CheckTopics([]TopicOp{write(0, "#a", "a1", 0, 10), read(1, "#a", "", 20, 30)}, nil, 0)
	var out bytes.Buffer
	if err := v.WriteVisualization(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "<html") {
		t.Errorf("visualization is not HTML: %.80q", out.String())
	}
}

// TestCheckTopicsManyUnknownWrites guards against the search blowing up on writes with an
// unknown outcome: unresolved ones are dropped, resolved ones have a finite return time.
func TestCheckTopicsManyUnknownWrites(t *testing.T) {
	var ops []TopicOp
	at := 0
	for i := range 300 {
		ops = append(ops, write(i%3, "#a", "w"+strconv.Itoa(i), at, at+5))
		ops = append(ops, unknownWrite(3+i%3, "#a", "u"+strconv.Itoa(i), at+1))
		ops = append(ops, read(6, "#a", "w"+strconv.Itoa(i), at+6, at+8))
		at += 10
	}
	v := CheckTopics(ops, nil, 10*time.Second)
	if v.Result != porcupine.Ok {
		t.Fatalf("result = %v, want Ok", v.Result)
	}
}
