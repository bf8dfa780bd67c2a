package testcluster

import (
	"fmt"
	"io"
	"math"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// OpKind says whether a topic operation read or wrote.
type OpKind int

const (
	ReadOp OpKind = iota
	WriteOp
)

// Outcome is what the client learnt about an operation.
type Outcome int

const (
	// Done: the write was acknowledged (the setter saw its own TOPIC echo) or the read answered.
	Done Outcome = iota
	// Unknown: the connection dropped, or the server answered TEMPORARILY_UNAVAILABLE, before
	// the acknowledgement. The write may or may not have been applied, at any time after Call.
	Unknown
)

// TopicOp is one topic operation as a client saw it. Operations that failed for certain (a
// refusal such as 482 or 442, which the server sends without proposing anything) are not
// recorded; unknown reads are not recorded either, since a read changes nothing.
type TopicOp struct {
	Client  int
	Channel string
	Kind    OpKind
	Value   string        // the value written, or the value read ("" when no topic is set)
	Call    time.Duration // since the history began
	Return  time.Duration // ignored for Unknown
	Outcome Outcome
	Node    string // the node the client talked to, for reports
}

func (op TopicOp) String() string {
	verb := "read"
	if op.Kind == WriteOp {
		verb = "write"
	}
	ret := op.Return.Round(time.Millisecond).String()
	if op.Outcome == Unknown {
		ret = "?"
	}
	return fmt.Sprintf("client %d on %s: %s %s %q [%s, %s]", op.Client, op.Node, verb, op.Channel, op.Value,
		op.Call.Round(time.Millisecond), ret)
}

// LostWrite is an acknowledged write that a later read proved missing: the read began after the
// write was acknowledged and returned a value that was written (and acknowledged) before the
// write began, or no topic at all.
type LostWrite struct {
	Write TopicOp
	Read  TopicOp
}

// TopicVerdict is the result of CheckTopics.
type TopicVerdict struct {
	// Result is porcupine's answer: Ok, Illegal or Unknown (the check timed out).
	Result        porcupine.CheckResult
	Writes        int // acknowledged writes
	Reads         int
	UnknownWrites int // writes with an unknown outcome
	// ResolvedUnknown unknown writes were seen applied (an echo or a read showed their value) and
	// are checked as writes that completed by that observation; the others were never seen and are
	// left out, which is sound: a write whose value nobody read cannot change any read.
	ResolvedUnknown int
	Channels        int
	LostWrites      []LostWrite
	// PhantomReads returned a value that no operation wrote.
	PhantomReads []TopicOp

	model porcupine.Model
	info  porcupine.LinearizationInfo
}

// Linearizable reports whether porcupine found a linearization.
func (v *TopicVerdict) Linearizable() bool { return v.Result == porcupine.Ok }

// WriteVisualization writes porcupine's HTML view of the checked history (the longest partial
// linearizations when it is not linearizable).
func (v *TopicVerdict) WriteVisualization(w io.Writer) error {
	return porcupine.Visualize(v.model, v.info, w)
}

// topicInput and topicOutput are the porcupine operation values.
type topicInput struct {
	channel string
	kind    OpKind
	value   string
}

type topicOutput struct{ value string }

// topicModel is a register per channel, initially empty (no topic).
func topicModel() porcupine.Model {
	return porcupine.Model{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			byChannel := map[string][]porcupine.Operation{}
			var order []string
			for _, op := range history {
				ch := op.Input.(topicInput).channel
				if _, ok := byChannel[ch]; !ok {
					order = append(order, ch)
				}
				byChannel[ch] = append(byChannel[ch], op)
			}
			out := make([][]porcupine.Operation, 0, len(order))
			for _, ch := range order {
				out = append(out, byChannel[ch])
			}
			return out
		},
		Init: func() any { return "" },
		Step: func(state, input, output any) (bool, any) {
			in := input.(topicInput)
			if in.kind == WriteOp {
				return true, in.value
			}
			return output.(topicOutput).value == state.(string), state
		},
		Equal: func(a, b any) bool { return a.(string) == b.(string) },
		DescribeOperation: func(input, output any) string {
			in := input.(topicInput)
			if in.kind == WriteOp {
				return fmt.Sprintf("%s ← %q", in.channel, in.value)
			}
			return fmt.Sprintf("%s → %q", in.channel, output.(topicOutput).value)
		},
		DescribeState: func(state any) string { return fmt.Sprintf("%q", state) },
	}
}

// CheckTopics checks a history of topic operations for linearizability (one register per
// channel, initially without a topic) and looks for acknowledged writes that later reads prove
// lost. observed[channel][value] is the earliest time a client saw a TOPIC echo carrying value;
// it resolves unknown writes. Written values must be unique per channel. timeout bounds
// porcupine (0: no bound); a timeout gives Result Unknown.
func CheckTopics(ops []TopicOp, observed map[string]map[string]time.Duration, timeout time.Duration) TopicVerdict {
	var v TopicVerdict
	firstSeen := map[string]map[string]time.Duration{}
	see := func(ch, value string, at time.Duration) {
		m := firstSeen[ch]
		if m == nil {
			m = map[string]time.Duration{}
			firstSeen[ch] = m
		}
		if old, ok := m[value]; !ok || at < old {
			m[value] = at
		}
	}
	for ch, values := range observed {
		for value, at := range values {
			see(ch, value, at)
		}
	}
	for _, op := range ops {
		if op.Kind == ReadOp && op.Outcome == Done {
			see(op.Channel, op.Value, op.Return)
		}
	}

	var checked []TopicOp
	for _, op := range ops {
		switch {
		case op.Kind == ReadOp && op.Outcome == Done:
			v.Reads++
			checked = append(checked, op)
		case op.Kind == WriteOp && op.Outcome == Done:
			v.Writes++
			checked = append(checked, op)
		case op.Kind == WriteOp:
			v.UnknownWrites++
			if at, ok := firstSeen[op.Channel][op.Value]; ok {
				v.ResolvedUnknown++
				op.Return = max(at, op.Call)
				checked = append(checked, op)
			}
		}
	}

	history := make([]porcupine.Operation, 0, len(checked))
	channels := map[string]bool{}
	for _, op := range checked {
		channels[op.Channel] = true
		history = append(history, porcupine.Operation{
			ClientId: op.Client,
			Input:    topicInput{channel: op.Channel, kind: op.Kind, value: op.Value},
			Output:   topicOutput{value: op.Value},
			Call:     int64(op.Call),
			Return:   int64(op.Return),
		})
	}
	v.Channels = len(channels)
	v.model = topicModel()
	v.Result, v.info = porcupine.CheckOperationsVerbose(v.model, history, timeout)
	v.LostWrites, v.PhantomReads = findLostWrites(ops, checked)
	return v
}

// findLostWrites finds, per channel, each acknowledged write w for which some read that began
// after w returned carries a value whose write returned before w began (or no topic). Such a
// read cannot be ordered after w in any linearization: w's effect is gone. checked holds the
// writes to compare against, with resolved return times.
func findLostWrites(ops, checked []TopicOp) ([]LostWrite, []TopicOp) {
	type readKey struct {
		read      TopicOp
		writtenBy time.Duration // return time of the write of the value read
	}
	writeReturn := map[string]map[string]time.Duration{}
	for _, op := range checked {
		if op.Kind != WriteOp {
			continue
		}
		if writeReturn[op.Channel] == nil {
			writeReturn[op.Channel] = map[string]time.Duration{}
		}
		writeReturn[op.Channel][op.Value] = op.Return
	}
	reads := map[string][]readKey{}
	var phantoms []TopicOp
	for _, op := range checked {
		if op.Kind != ReadOp {
			continue
		}
		at, ok := writeReturn[op.Channel][op.Value]
		switch {
		case op.Value == "":
			at = math.MinInt64 // the initial state precedes every write
		case !ok:
			// A value nobody wrote, or only a write that was never seen: porcupine flags it.
			phantoms = append(phantoms, op)
			continue
		}
		reads[op.Channel] = append(reads[op.Channel], readKey{read: op, writtenBy: at})
	}
	// Per channel, sort reads by call time and keep, for each suffix, the read whose value was
	// written earliest.
	type suffix struct {
		calls  []time.Duration
		minAt  []time.Duration
		minIdx []int
		reads  []readKey
	}
	suffixes := map[string]*suffix{}
	for ch, rs := range reads {
		sort.Slice(rs, func(i, j int) bool { return rs[i].read.Call < rs[j].read.Call })
		s := &suffix{reads: rs, calls: make([]time.Duration, len(rs)), minAt: make([]time.Duration, len(rs)), minIdx: make([]int, len(rs))}
		for i := len(rs) - 1; i >= 0; i-- {
			s.calls[i] = rs[i].read.Call
			s.minAt[i], s.minIdx[i] = rs[i].writtenBy, i
			if i+1 < len(rs) && s.minAt[i+1] < s.minAt[i] {
				s.minAt[i], s.minIdx[i] = s.minAt[i+1], s.minIdx[i+1]
			}
		}
		suffixes[ch] = s
	}
	var lost []LostWrite
	for _, w := range ops {
		if w.Kind != WriteOp || w.Outcome != Done {
			continue
		}
		s := suffixes[w.Channel]
		if s == nil {
			continue
		}
		first := sort.Search(len(s.calls), func(i int) bool { return s.calls[i] > w.Return })
		if first < len(s.calls) && s.minAt[first] < w.Call {
			lost = append(lost, LostWrite{Write: w, Read: s.reads[s.minIdx[first]].read})
		}
	}
	return lost, phantoms
}
