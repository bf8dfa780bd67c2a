package act

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"testing"
)

// transitionsFile is the part of act-transitions.json the sequence tests read.
type transitionsFile struct {
	Opening []struct {
		Name          string `json:"name"`
		Kind          string `json:"kind"`
		Verb          string `json:"verb"`
		Directed      bool   `json:"directed"`
		NamesTask     bool   `json:"names_task"`
		Expect        string `json:"expect"`
		ExpectRefused string `json:"expect_refused"`
	} `json:"opening_sequences"`
	Revival []struct {
		Name          string `json:"name"`
		Opens         bool   `json:"opens"`
		Names         string `json:"names"`
		Predecessor   string `json:"predecessor"`
		Expect        string `json:"expect"`
		ExpectRefused string `json:"expect_refused"`
	} `json:"revival_sequences"`
	Sequences []struct {
		Name string `json:"name"`
		Task struct {
			Kind        string  `json:"kind"`
			Offer       string  `json:"offer"`
			State       string  `json:"state"`
			Offerer     string  `json:"offerer"`
			Offeree     *string `json:"offeree"`
			Deadline    *int64  `json:"deadline"`
			BidDeadline *int64  `json:"bid_deadline"`
		} `json:"task"`
		Steps []struct {
			Verb          string   `json:"verb"`
			Sender        string   `json:"sender"`
			System        bool     `json:"system"`
			EventID       string   `json:"event_id"`
			Tags          []string `json:"tags"`
			Accepts       string   `json:"accepts"`
			AcceptedBid   string   `json:"accepted_bid"`
			Expect        string   `json:"expect"`
			ExpectRefused string   `json:"expect_refused"`
		} `json:"steps"`
	} `json:"sequences"`
}

func loadTransitions(t *testing.T) transitionsFile {
	t.Helper()
	data, err := os.ReadFile("testdata/act-transitions.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, rulesJSON) {
		t.Fatal("the embedded rules differ from testdata/act-transitions.json")
	}
	var f transitionsFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// theBounty is the id the sequences give a bounty's own opener ("an award naming the bounty's own
// opener names no bid").
const theBounty = "01M16E7TC0THEBNTY000000000"

func TestOpeningSequences(t *testing.T) {
	f := loadTransitions(t)
	if len(f.Opening) != 9 {
		t.Fatalf("%d opening sequences, want 9", len(f.Opening))
	}
	for _, tc := range f.Opening {
		t.Run(tc.Name, func(t *testing.T) {
			ev := Event{ID: "01M16E7TC0OPENER0000000000", Sender: "did:plc:eliza",
				Fields: map[string]string{FieldKind: tc.Kind, FieldVerb: tc.Verb}}
			if tc.Directed {
				ev.Fields[FieldTo] = "did:plc:scholar"
			}
			if tc.NamesTask {
				ev.Fields[FieldID] = "01M16E7TC0EXISTING00000000"
			}
			a, refused := Default.Open(ev, nil)
			if string(refused) != tc.ExpectRefused {
				t.Fatalf("refusal %q, want %q", refused, tc.ExpectRefused)
			}
			if refused == Accepted && (a.State != tc.Expect || a.ID != ev.ID || a.Offerer != ev.Sender) {
				t.Fatalf("opened %+v, want state %q", a, tc.Expect)
			}
		})
	}
}

func TestRevivalSequences(t *testing.T) {
	f := loadTransitions(t)
	if len(f.Revival) != 5 {
		t.Fatalf("%d revival sequences, want 5", len(f.Revival))
	}
	preds := map[string]Predecessor{"unknown": PredecessorUnknown, "live": PredecessorLive, "finished": PredecessorFinished}
	for _, tc := range f.Revival {
		t.Run(tc.Name, func(t *testing.T) {
			lookup := func(id string) Predecessor {
				if id != tc.Names {
					t.Errorf("lookup of %q, want %q", id, tc.Names)
				}
				return preds[tc.Predecessor]
			}
			fields := map[string]string{FieldKind: "handoff", FieldVerb: "offer", FieldReplaces: tc.Names}
			var refused Refusal
			if tc.Opens {
				_, refused = Default.Open(Event{ID: "01M16E7TC0REOFFER000000000", Sender: "did:plc:eliza", Fields: fields}, lookup)
			} else {
				fields[FieldVerb] = "progress"
				fields[FieldID] = "01M16E7TC0LIVE000000000000"
				live := Action{ID: "01M16E7TC0LIVE000000000000", Kind: "handoff", State: "assigned", Offerer: "did:plc:eliza", Assignee: "did:plc:scholar"}
				_, refused = Default.Step(live, Event{ID: "01M16E7TC0STEP00000000000", Sender: "did:plc:scholar", Fields: fields})
			}
			want := tc.ExpectRefused
			if refused != Refusal(want) {
				t.Fatalf("refusal %q, want %q (expect %q)", refused, want, tc.Expect)
			}
		})
	}
}

// TestSequences plays all 45 sequences of act-transitions.json: every step's verdict and the state
// after it.
func TestSequences(t *testing.T) {
	f := loadTransitions(t)
	if len(f.Sequences) != 45 {
		t.Fatalf("%d sequences, want 45", len(f.Sequences))
	}
	for _, seq := range f.Sequences {
		t.Run(seq.Name, func(t *testing.T) {
			tk := seq.Task
			a := Action{ID: theBounty, Kind: tk.Kind, Offerer: tk.Offerer, State: tk.State}
			if tk.Offeree != nil {
				a.Offeree = *tk.Offeree
			}
			if tk.Deadline != nil {
				a.Deadline = *tk.Deadline
			}
			if tk.BidDeadline != nil {
				a.BidDeadline = *tk.BidDeadline
			}
			if kind := Default.Kinds[tk.Kind]; kind != nil {
				// Open the task as the file describes it, through the checker.
				fields := map[string]string{FieldKind: tk.Kind, FieldVerb: kind.Opens.Verb}
				if tk.Offer == "directed" {
					fields[FieldTo] = a.Offeree
				}
				if tk.Deadline != nil {
					fields[FieldDeadline] = fmt.Sprint(*tk.Deadline)
				}
				if tk.BidDeadline != nil {
					fields[FieldBidDeadline] = fmt.Sprint(*tk.BidDeadline)
				}
				opened, refused := Default.Open(Event{ID: theBounty, Sender: tk.Offerer, Fields: fields}, nil)
				if refused != Accepted {
					t.Fatalf("opening: %q", refused)
				}
				if opened.Deadline != a.Deadline || opened.BidDeadline != a.BidDeadline || opened.Offeree != a.Offeree {
					t.Fatalf("opened %+v, want %+v", opened, a)
				}
				a = opened
			}
			for i, st := range seq.Steps {
				id := st.EventID
				if id == "" {
					id = fmt.Sprintf("01M16E7TC0STEP%012d", i)
				}
				fields := map[string]string{FieldKind: tk.Kind, FieldVerb: st.Verb, FieldID: a.ID}
				for _, tag := range st.Tags {
					if tag == FieldAccepts {
						fields[FieldAccepts] = st.Accepts
					}
				}
				if st.AcceptedBid != "" {
					if _, known := a.Bids[st.Accepts]; !known {
						// The bid the award takes, filed before the sequence starts.
						a.Bids = map[string]string{st.Accepts: st.AcceptedBid}
					}
				}
				before := a
				next, refused := Default.Step(a, Event{ID: id, Sender: st.Sender, System: st.System, Fields: fields})
				if string(refused) != st.ExpectRefused {
					t.Fatalf("step %d (%s by %s): refusal %q, want %q", i, st.Verb, st.Sender, refused, st.ExpectRefused)
				}
				if refused != Accepted {
					if next.State != before.State || next.Assignee != before.Assignee {
						t.Fatalf("step %d: a refused step changed the action: %+v", i, next)
					}
					continue
				}
				if next.State != st.Expect {
					t.Fatalf("step %d (%s by %s): state %q, want %q", i, st.Verb, st.Sender, next.State, st.Expect)
				}
				if st.AcceptedBid != "" && next.Assignee != st.AcceptedBid {
					t.Fatalf("step %d: assignee %q, want the bid's author %q", i, next.Assignee, st.AcceptedBid)
				}
				a = next
			}
		})
	}
}

func TestIDTime(t *testing.T) {
	for _, tc := range []struct {
		id   string
		ms   int64
		okay bool
	}{
		{"01M16HSB60ACCEPTATEDGE0000", 1788000000000 + 120000, true},
		{"01M16HSC58ACCEPTTOOLATE000", 1788000000000 + 121000, true},
		{"0000000000", 0, true},
		{"7ZZZZZZZZZ", 1<<48 - 1, true},
		{"8000000000", 0, false},
		{"01M16HSB6", 0, false},
		{"01M16HSU60", 0, false},
		{"01m16hsb60", 1788000000000 + 120000, true},
	} {
		ms, ok := IDTime(tc.id)
		if ok != tc.okay || ok && ms != tc.ms {
			t.Errorf("IDTime(%q) = %d, %v; want %d, %v", tc.id, ms, ok, tc.ms, tc.okay)
		}
	}
}

func TestWellFormedID(t *testing.T) {
	for id, want := range map[string]bool{
		"01M16E7TC0ENDED00000000000": true,
		"01M16E7TC0SHRT":             false,
		"01M16E7TC0ENDED0000000000!": false,
		"91M16E7TC0ENDED00000000000": false,
		"":                           false,
	} {
		if got := WellFormedID(id); got != want {
			t.Errorf("WellFormedID(%q) = %v", id, got)
		}
	}
}
