package testcluster

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/anishathalye/porcupine"
)

// Report is the outcome of Run.
type Report struct {
	Seed     int64
	Nodes    int
	Chaos    bool
	Duration time.Duration // traffic time
	Rounds   int           // nemesis rounds completed
	Events   []NemesisEvent

	Topics   TopicVerdict
	Nicks    ObjectVerdict // nick owners: claims, releases, fenced WHOIS
	Modes    ObjectVerdict // channel modes: MODE changes, fenced MODE queries
	Pins     ObjectVerdict // pin lists: PIN, UNPIN, fenced PINS and strong REST reads
	Delivery DeliveryVerdict

	HashesEqual bool
	States      []NodeState
	// DeadLetters: items each node recorded as dead letters from its peers (in-process nodes),
	// by node name; the poison fault's rows end there.
	DeadLetters   map[string]int64
	ConvergeError string

	// Phases are how long each step after the traffic took.
	Phases []Phase

	// Problems are things that kept the run from being carried out as planned (a node that did
	// not restart, nodes that did not converge, a final read that failed). Each fails the run.
	Problems []string
}

// Phase is one step after the traffic and its duration.
type Phase struct {
	Name string
	Took time.Duration
}

// Failures lists every failed check; empty when the run passed.
func (r *Report) Failures() []string {
	var out []string
	if n := len(r.Topics.LostWrites); n > 0 {
		out = append(out, fmt.Sprintf("%d acknowledged topic changes lost", n))
	}
	switch r.Topics.Result {
	case porcupine.Illegal:
		out = append(out, "topic history is not linearizable")
	case porcupine.Unknown:
		out = append(out, "linearizability check timed out")
	}
	if n := len(r.Topics.PhantomReads); n > 0 {
		out = append(out, fmt.Sprintf("%d topic reads returned a value nobody wrote", n))
	}
	for _, v := range r.objectVerdicts() {
		switch v.Result {
		case porcupine.Illegal:
			out = append(out, fmt.Sprintf("%s history is not linearizable (%s)", v.Kind, strings.Join(v.Illegal, ", ")))
		case porcupine.Unknown:
			out = append(out, fmt.Sprintf("%s linearizability check timed out", v.Kind))
		}
	}
	if n := len(r.Delivery.Lost); n > 0 {
		out = append(out, fmt.Sprintf("%d acknowledged messages lost (%d receiver-message pairs)", r.Delivery.LostMessages(), n))
	}
	if n := r.Delivery.DuplicatedCopies(); n > 0 {
		out = append(out, fmt.Sprintf("%d duplicated deliveries", n))
	}
	if n := r.Delivery.RefusedDelivered; n > 0 {
		out = append(out, fmt.Sprintf("%d messages refused to their sender were delivered", n))
	}
	if n := r.Delivery.MsgIDMismatches; n > 0 {
		out = append(out, fmt.Sprintf("%d deliveries carried another msgid than the sender's echo", n))
	}
	if !r.HashesEqual {
		out = append(out, "state hashes differ: "+r.ConvergeError)
	}
	return append(out, r.Problems...)
}

// objectVerdicts are the nick, mode and pin verdicts.
func (r *Report) objectVerdicts() []*ObjectVerdict {
	return []*ObjectVerdict{&r.Nicks, &r.Modes, &r.Pins}
}

// FaultCounts says how many rounds of each kind began, and what they aimed at, e.g.
// "kill 3 (2 leader), partition 2 (1 leader isolated), transfer 1, slow-disk 1 (0 leader)".
func (r *Report) FaultCounts() string {
	type count struct{ rounds, leader, failed int }
	counts := map[FaultKind]*count{}
	for _, e := range r.Events {
		switch e.Kind {
		case "kill", "partition", "transfer", "slow-disk", "poison", "upgrade":
		default:
			continue
		}
		c := counts[e.Fault]
		if c == nil {
			c = &count{}
			counts[e.Fault] = c
		}
		c.rounds++
		if e.Leader && e.Fault != FaultTransfer {
			c.leader++
		}
		if e.Err != nil {
			c.failed++
		}
	}
	var parts []string
	for _, k := range append(slices.Clone(AllFaults), FaultUpgrade) {
		c := counts[k]
		if c == nil {
			continue
		}
		part := fmt.Sprintf("%s %d", k, c.rounds)
		if k != FaultTransfer {
			part += fmt.Sprintf(" (%d at the leader)", c.leader)
		}
		if c.failed > 0 {
			part += fmt.Sprintf(" [%d failed to inject]", c.failed)
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

// Passed reports whether every check passed.
func (r *Report) Passed() bool { return len(r.Failures()) == 0 }

func objectNoun(kind string) string {
	if kind == "nick" {
		return "nick"
	}
	return "channel"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// WriteTable writes the verdict table.
func (r *Report) WriteTable(w io.Writer) {
	t := &r.Topics
	d := &r.Delivery
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "run\t%d nodes, seed %d, %s of traffic, chaos %s, %d nemesis rounds\n", r.Nodes, r.Seed, r.Duration.Round(100*time.Millisecond), yesNo(r.Chaos), r.Rounds)
	if faults := r.FaultCounts(); len(faults) > 0 {
		fmt.Fprintf(tw, "faults injected\t%s\n", faults)
	}
	fmt.Fprintf(tw, "acknowledged state changes lost\t%d\t(%d topic writes acknowledged, %d outcome unknown, %d of them seen applied)\n",
		len(t.LostWrites), t.Writes, t.UnknownWrites, t.ResolvedUnknown)
	lin := yesNo(t.Linearizable())
	if t.Result == porcupine.Unknown {
		lin = "unknown (checker timed out)"
	}
	fmt.Fprintf(tw, "topic ops linearizable\t%s\t(%d writes and %d fenced reads on %d channels)\n", lin, t.Writes+t.ResolvedUnknown, t.Reads, t.Channels)
	for _, v := range r.objectVerdicts() {
		if v.Result == "" {
			continue // not run
		}
		lin := yesNo(v.Linearizable())
		if v.Result == porcupine.Unknown {
			lin = "unknown (checker timed out)"
		}
		answers := ""
		if len(v.Answers) > 0 {
			answers = " (" + v.AnswerCounts() + ")"
		}
		fmt.Fprintf(tw, "%s ops linearizable\t%s\t(%d writes acknowledged%s, %d outcome unknown, %d fenced reads on %d %ss)\n",
			v.Kind, lin, v.Writes, answers, v.UnknownWrites, v.Reads, v.Objects, objectNoun(v.Kind))
	}
	fmt.Fprintf(tw, "acknowledged messages lost / duplicated\t%d / %d\t(%d acknowledged, %d outcome unknown, %d refused; %d deliveries owed; %d read both live and from history)\n",
		d.LostMessages(), d.DuplicatedCopies(), d.Acked, d.Unknown, d.Refused, d.Owed, d.Overlaps)
	hashes := yesNo(r.HashesEqual)
	if r.HashesEqual && len(r.States) > 0 {
		hashes += fmt.Sprintf("\t(%d nodes at index %d, hash %x)", len(r.States), r.States[0].AppliedIndex, r.States[0].Hash[:6])
	}
	fmt.Fprintf(tw, "state hashes equal\t%s\n", hashes)
	if r.DeadLetters != nil {
		fmt.Fprintf(tw, "dead letters recorded\t%d\t(items from peers passed over, on %d nodes)\n", sum(r.DeadLetters), len(r.DeadLetters))
	}
	verdict := "PASS"
	if !r.Passed() {
		verdict = "FAIL"
	}
	if len(r.Phases) > 0 {
		var parts []string
		for _, p := range r.Phases {
			parts = append(parts, fmt.Sprintf("%s %s", p.Name, p.Took.Round(10*time.Millisecond)))
		}
		fmt.Fprintf(tw, "after the traffic\t%s\n", strings.Join(parts, ", "))
	}
	fmt.Fprintf(tw, "verdict\t%s\n", verdict)
	tw.Flush()
}

// WriteDetails writes what went wrong, at most limit items of each kind.
func (r *Report) WriteDetails(w io.Writer, limit int) {
	for _, f := range r.Failures() {
		fmt.Fprintf(w, "FAILED: %s\n", f)
	}
	for i, l := range r.Topics.LostWrites {
		if i == limit {
			fmt.Fprintf(w, "  ... %d more lost writes\n", len(r.Topics.LostWrites)-limit)
			break
		}
		fmt.Fprintf(w, "  lost write: %s\n    proved by a later read: %s\n", l.Write, l.Read)
	}
	for i, op := range r.Topics.PhantomReads {
		if i == limit {
			break
		}
		fmt.Fprintf(w, "  phantom read: %s\n", op)
	}
	for i, l := range r.Delivery.Lost {
		if i == limit {
			fmt.Fprintf(w, "  ... %d more lost deliveries\n", len(r.Delivery.Lost)-limit)
			break
		}
		stored := ""
		if l.Stored != "" {
			stored = ", stored on the receiver's node: " + l.Stored
		}
		fmt.Fprintf(w, "  lost: %q (msgid %s, sent by %s on %s at %.3fs) never read by %s on %s%s\n    %s\n",
			l.Message.Text, l.Message.MsgID, l.Message.Sender, l.Message.Node, l.Message.Call.Seconds(), l.Receiver, l.Node, stored, l.Why)
	}
	for i, dup := range r.Delivery.Duplicates {
		if i == limit {
			fmt.Fprintf(w, "  ... %d more duplicates\n", len(r.Delivery.Duplicates)-limit)
			break
		}
		fmt.Fprintf(w, "  duplicate: %q (msgid %s) read %d extra time(s) by %s (%s)\n", dup.Text, dup.MsgID, dup.Extra, dup.Receiver, dup.Where)
	}
	if !r.HashesEqual {
		for _, s := range r.States {
			fmt.Fprintf(w, "  state: %s applied=%d state-index=%d hash=%x\n", s.Node, s.AppliedIndex, s.StateIndex, s.Hash[:8])
		}
	}
}
