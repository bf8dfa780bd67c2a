package testcluster

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// ObjectOp is one operation on a replicated object other than a topic — a nick's owner, a
// channel's mode set, a channel's pin list — as a client saw it. Writes whose outcome is unknown
// (the connection dropped, or the server said TEMPORARILY_UNAVAILABLE) stay in the history as
// operations that may take effect at any time after Call, or never: they are checked as if they
// returned after everything else, so a linearization may place them last, where they change
// nothing anyone read. Refusals (the server did nothing, for certain) are not recorded.
type ObjectOp struct {
	Client int
	Object string // the nick or channel; each object is checked on its own
	Actor  string // who acted: the connection's identity (its USER name) for nick claims
	Kind   OpKind
	// Arg is what a write asked: "claim" or "release" (nicks), mode changes such as "+m",
	// "-k" or "+k key" (modes), "pin <msgid>" or "unpin <msgid>" (pins). Empty for reads.
	Arg string
	// Result is a write's answer ("ok", "in use", "already pinned", "not pinned") or the
	// value a read returned, in the form of the model's state; "" for an unknown outcome.
	Result  string
	Call    time.Duration
	Return  time.Duration // ignored for Unknown
	Outcome Outcome
	Node    string
}

func (op ObjectOp) String() string {
	ret := op.Return.Round(time.Millisecond).String()
	if op.Outcome == Unknown {
		ret = "?"
	}
	what := fmt.Sprintf("read %s → %q", op.Object, op.Result)
	if op.Kind == WriteOp {
		what = fmt.Sprintf("%s %s by %s → %q", op.Arg, op.Object, op.Actor, op.Result)
	}
	return fmt.Sprintf("client %d on %s: %s [%s, %s]", op.Client, op.Node, what, op.Call.Round(time.Millisecond), ret)
}

// objectSpec is the sequential specification of one kind of object. States are canonical
// strings, so a read's result compares with ==.
type objectSpec struct {
	kind string // "nick", "mode", "pin"
	init string
	// apply performs a write on state: ok reports whether the write's answer (op.Result) is
	// possible from state; with an unknown outcome any answer is.
	apply func(state string, op ObjectOp) (ok bool, next string)
}

// ObjectVerdict is the result of CheckNicks, CheckModes or CheckPins.
type ObjectVerdict struct {
	Kind string // "nick", "mode", "pin"
	// Result is porcupine's answer: Ok, Illegal or Unknown (the check timed out). It is ""
	// when the check did not run.
	Result        porcupine.CheckResult
	Writes        int            // acknowledged writes
	Answers       map[string]int // acknowledged writes by answer ("ok", "in use", ...)
	Reads         int
	UnknownWrites int
	Objects       int
	// Illegal lists the objects whose own history is not linearizable.
	Illegal []string

	model porcupine.Model
	info  porcupine.LinearizationInfo
}

// Linearizable reports whether porcupine found a linearization.
func (v *ObjectVerdict) Linearizable() bool { return v.Result == porcupine.Ok }

// WriteVisualization writes porcupine's HTML view of the checked history.
func (v *ObjectVerdict) WriteVisualization(w io.Writer) error {
	if v.model.Step == nil {
		return fmt.Errorf("testcluster: no %s history was checked", v.Kind)
	}
	return porcupine.Visualize(v.model, v.info, w)
}

// AnswerCounts formats Answers as "ok 12, in use 3", in a stable order.
func (v *ObjectVerdict) AnswerCounts() string {
	keys := make([]string, 0, len(v.Answers))
	for k := range v.Answers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, v.Answers[k]))
	}
	return strings.Join(parts, ", ")
}

func (s objectSpec) model() porcupine.Model {
	return porcupine.Model{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			byObject := map[string][]porcupine.Operation{}
			var order []string
			for _, op := range history {
				o := op.Input.(ObjectOp).Object
				if _, ok := byObject[o]; !ok {
					order = append(order, o)
				}
				byObject[o] = append(byObject[o], op)
			}
			out := make([][]porcupine.Operation, 0, len(order))
			for _, o := range order {
				out = append(out, byObject[o])
			}
			return out
		},
		Init: func() any { return s.init },
		Step: func(state, input, _ any) (bool, any) {
			op := input.(ObjectOp)
			if op.Kind == ReadOp {
				return op.Result == state.(string), state
			}
			return s.apply(state.(string), op)
		},
		Equal: func(a, b any) bool { return a.(string) == b.(string) },
		DescribeOperation: func(input, _ any) string {
			op := input.(ObjectOp)
			if op.Kind == ReadOp {
				return fmt.Sprintf("%s → %q", op.Object, op.Result)
			}
			if op.Outcome == Unknown {
				return fmt.Sprintf("%s %s by %s (outcome unknown)", op.Arg, op.Object, op.Actor)
			}
			return fmt.Sprintf("%s %s by %s → %s", op.Arg, op.Object, op.Actor, op.Result)
		},
		DescribeState: func(state any) string { return fmt.Sprintf("%q", state) },
	}
}

// check runs porcupine over ops. Unknown writes return after the last known event.
func (s objectSpec) check(ops []ObjectOp, timeout time.Duration) ObjectVerdict {
	v := ObjectVerdict{Kind: s.kind, Answers: map[string]int{}, model: s.model()}
	var horizon time.Duration
	for _, op := range ops {
		horizon = max(horizon, op.Call, op.Return)
	}
	horizon += time.Hour
	objects := map[string]bool{}
	byObject := map[string][]porcupine.Operation{}
	history := make([]porcupine.Operation, 0, len(ops))
	for _, op := range ops {
		ret := op.Return
		switch {
		case op.Kind == ReadOp && op.Outcome == Done:
			v.Reads++
		case op.Kind == WriteOp && op.Outcome == Done:
			v.Writes++
			v.Answers[op.Result]++
		case op.Kind == WriteOp:
			v.UnknownWrites++
			op.Result = ""
			ret = horizon
		default:
			continue // an unknown read tells nothing
		}
		objects[op.Object] = true
		p := porcupine.Operation{ClientId: op.Client, Input: op, Output: op.Result, Call: int64(op.Call), Return: int64(ret)}
		history = append(history, p)
		byObject[op.Object] = append(byObject[op.Object], p)
	}
	v.Objects = len(objects)
	v.Result, v.info = porcupine.CheckOperationsVerbose(v.model, history, timeout)
	if v.Result == porcupine.Illegal {
		for o, h := range byObject {
			if porcupine.CheckOperationsTimeout(v.model, h, timeout) == porcupine.Illegal {
				v.Illegal = append(v.Illegal, o)
			}
		}
		slices.Sort(v.Illegal)
	}
	return v
}
