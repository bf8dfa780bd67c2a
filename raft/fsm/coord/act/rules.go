package act

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
)

// rulesJSON is freeq's act-transitions.json (v1, MIT, see LICENSE.freeq): the kinds, their
// openers, transitions and terminal states, the receipt verb, the revival tag and the deadline
// tolerance. The checker reads them as data, so the rules it enforces are exactly the file's.
//
//go:embed rules.json
var rulesJSON []byte

// Rules are the task kinds a checker knows.
type Rules struct {
	Kinds map[string]*Kind `json:"kinds"`
	// Confirmation is the receipt verb no kind may claim.
	Confirmation struct {
		Verb    string `json:"verb"`
		Subject string `json:"subject"`
	} `json:"confirmation"`
	// Revival names the tag of an opener that revives a finished action.
	Revival struct {
		Tag string `json:"tag"`
	} `json:"revival"`
	DeadlineRule struct {
		ToleranceMS int64 `json:"tolerance_ms"`
	} `json:"deadline_rule"`
}

// Kind is one task kind: how it opens, where it ends and how it moves.
type Kind struct {
	Opens struct {
		Verb     string `json:"verb"`
		Directed string `json:"directed"`
		Open     string `json:"open"`
	} `json:"opens"`
	Terminal    []string     `json:"terminal"`
	Transitions []Transition `json:"transitions"`
}

// Transition is one legal move: a verb from some states to one, by a role.
type Transition struct {
	Verb              string   `json:"verb"`
	From              States   `json:"from"`
	To                string   `json:"to"`
	Who               string   `json:"who"`
	BeforeDeadline    bool     `json:"before_deadline"`
	BeforeBidDeadline bool     `json:"before_bid_deadline"`
	Requires          []string `json:"requires"`
	AssigneeFrom      *struct {
		AuthorOf string `json:"author_of"`
	} `json:"assignee_from"`
}

// States is a transition's source: one state, a list, or "*nonterminal".
type States []string

// UnmarshalJSON accepts a string or a list of strings.
func (s *States) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = States{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("act: transition from: %w", err)
	}
	*s = many
	return nil
}

// nonterminal is the From wildcard for every state that is not terminal.
const nonterminal = "*nonterminal"

// Roles a transition may require.
const (
	RoleOfferer  = "offerer"
	RoleOfferee  = "offeree"
	RoleAssignee = "assignee"
	RoleAnyone   = "anyone"
	RoleSystem   = "system"
)

// Default are the embedded rules.
var Default = mustRules(rulesJSON)

// ParseRules reads a transitions file.
func ParseRules(data []byte) (*Rules, error) {
	var r Rules
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("act: rules: %w", err)
	}
	if len(r.Kinds) == 0 || r.Confirmation.Verb == "" || r.Revival.Tag == "" {
		return nil, fmt.Errorf("act: rules: kinds, confirmation and revival are required")
	}
	return &r, nil
}

func mustRules(data []byte) *Rules {
	r, err := ParseRules(data)
	if err != nil {
		panic(err)
	}
	return r
}

// IsTerminal reports whether state ends an action of this kind.
func (k *Kind) IsTerminal(state string) bool { return slices.Contains(k.Terminal, state) }

// from reports whether the transition may start in state.
func (t *Transition) from(k *Kind, state string) bool {
	for _, s := range t.From {
		if s == state || (s == nonterminal && !k.IsTerminal(state)) {
			return true
		}
	}
	return false
}
