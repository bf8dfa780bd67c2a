package act

import "testing"

// FuzzStep: any event on any action gets a verdict without a panic; a refusal leaves the action
// as it was, and an accepted step lands in a state of its kind.
func FuzzStep(f *testing.F) {
	f.Add("handoff", "offered", "accept", "did:plc:b", "01M16HSC58ACCEPTTOOLATE000", "", int64(1788000000), false)
	f.Add("bounty", "open", "award", "did:plc:a", "01M16E7TC0STEP00000000000", "01M16E7TC0BDTAKEN000000000", int64(0), false)
	f.Add("bounty", "under_review", "auto-accept", "did:web:x", "x", "", int64(0), true)
	f.Fuzz(func(t *testing.T, kind, state, verb, sender, id, accepts string, deadline int64, system bool) {
		opened, refused := Default.Open(Event{ID: id, Sender: sender, Fields: map[string]string{FieldKind: kind, FieldVerb: verb, FieldReplaces: accepts}}, nil)
		if refused == Accepted && (opened.ID != id || opened.Offerer != sender || opened.State == "") {
			t.Fatalf("opened %+v", opened)
		}
		a := Action{ID: "01M16E7TC0THEBNTY000000000", Kind: kind, State: state, Offerer: "did:plc:a", Offeree: "did:plc:b",
			Assignee: "did:plc:b", Deadline: deadline, Bids: map[string]string{"01M16E7TC0BDTAKEN000000000": "did:plc:c"}}
		fields := map[string]string{FieldKind: kind, FieldVerb: verb, FieldID: a.ID}
		if accepts != "" {
			fields[FieldAccepts] = accepts
		}
		next, refused := Default.Step(a, Event{ID: id, Sender: sender, System: system, Fields: fields})
		if refused != Accepted {
			if next.State != a.State || next.Assignee != a.Assignee || len(next.Bids) != len(a.Bids) {
				t.Fatalf("refused %q but changed %+v", refused, next)
			}
			return
		}
		k := Default.Kinds[kind]
		known := k.IsTerminal(next.State) || next.State == k.Opens.Open || next.State == k.Opens.Directed
		for _, tr := range k.Transitions {
			known = known || tr.To == next.State
		}
		if !known {
			t.Fatalf("state %q is not one of %s", next.State, kind)
		}
	})
}
