package act

import (
	"strconv"
	"strings"
)

// Refusal is why the checker refused an event: one of the keys of the transitions file. The
// empty Refusal means the event was accepted.
type Refusal string

// The refusal keys of act-transitions.json.
const (
	Accepted            Refusal = ""
	UnknownKind         Refusal = "unknown-kind"
	UnknownVerb         Refusal = "unknown-verb"
	TerminalTask        Refusal = "terminal-task"
	IllegalStep         Refusal = "illegal-step"
	WrongSender         Refusal = "wrong-sender"
	DeadlinePassed      Refusal = "deadline-passed"
	ClientConfirm       Refusal = "client-confirm"
	ReplacesNotOpener   Refusal = "replaces-not-opener"
	ReplacesMalformed   Refusal = "replaces-malformed"
	ReplacesNotTerminal Refusal = "replaces-not-terminal"
	MissingRequirement  Refusal = "missing-requirement"
	AcceptsNotABid      Refusal = "accepts-not-a-bid"
)

// Refusals lists every refusal key in the file's order.
var Refusals = []Refusal{UnknownKind, UnknownVerb, TerminalTask, IllegalStep, WrongSender, DeadlinePassed,
	ClientConfirm, ReplacesNotOpener, ReplacesMalformed, ReplacesNotTerminal, MissingRequirement, AcceptsNotABid}

// Field names (act-* tags with the +freeq.at/ prefix stripped) the checker reads.
const (
	FieldKind        = "act"
	FieldVerb        = "act-verb"
	FieldID          = "act-id"
	FieldTo          = "act-to"
	FieldDeadline    = "act-deadline"
	FieldBidDeadline = "act-bid-deadline"
	FieldAccepts     = "act-accepts"
	FieldReplaces    = "act-replaces"
	FieldSubject     = "act-subject"
	FieldCaps        = "act-caps"
	FieldTitle       = "act-title"
)

// Event is one act event as the checker sees it.
type Event struct {
	// ID is the event's own id (+freeq.at/eventid), a ULID whose time is the event's clock.
	ID string
	// Sender is the DID that sent it (+freeq.at/from, checked against the account).
	Sender string
	// System marks an event the server itself sends (expire, auto-accept).
	System bool
	// Fields are the event's act and act-* tags, keyed without the +freeq.at/ prefix.
	Fields map[string]string
}

// Kind is the event's act kind.
func (e Event) Kind() string { return e.Fields[FieldKind] }

// Verb is the event's act-verb.
func (e Event) Verb() string { return e.Fields[FieldVerb] }

// Action is the state of one action (a task), as far as the checker needs it.
type Action struct {
	ID       string `json:"act_id"`
	Kind     string `json:"kind"`
	State    string `json:"state"`
	Offerer  string `json:"offerer"`
	Offeree  string `json:"offeree,omitempty"`
	Assignee string `json:"assignee,omitempty"`
	// Deadline and BidDeadline are unix seconds; 0 bounds nothing.
	Deadline    int64 `json:"deadline,omitempty"`
	BidDeadline int64 `json:"bid_deadline,omitempty"`
	// Bids are the accepted bids: bid event id → its author.
	Bids map[string]string `json:"bids,omitempty"`
}

// Predecessor says what the checker knows of the action an opener's act-replaces names.
type Predecessor int

const (
	// PredecessorUnknown: an action this server never filed; annotated, not refused.
	PredecessorUnknown Predecessor = iota
	// PredecessorLive: an action still running.
	PredecessorLive
	// PredecessorFinished: an action in a terminal state.
	PredecessorFinished
)

// IsOpener reports whether ev opens an action: it names no act-id. A confirmation is never an
// opener.
func IsOpener(ev Event) bool {
	_, named := ev.Fields[FieldID]
	return !named
}

// Open checks an opener and returns the action it creates. lookup tells what is known of the
// action an act-replaces names (it is called only when the tag is present and well formed).
func (r *Rules) Open(ev Event, lookup func(actID string) Predecessor) (Action, Refusal) {
	if ev.Verb() == r.Confirmation.Verb {
		return Action{}, ClientConfirm
	}
	kind := r.Kinds[ev.Kind()]
	if kind == nil {
		return Action{}, UnknownKind
	}
	if ev.Verb() != kind.Opens.Verb {
		if kind.hasVerb(ev.Verb()) {
			return Action{}, IllegalStep
		}
		return Action{}, UnknownVerb
	}
	if _, named := ev.Fields[FieldID]; named {
		return Action{}, IllegalStep
	}
	a := Action{ID: ev.ID, Kind: ev.Kind(), Offerer: ev.Sender}
	if to := ev.Fields[FieldTo]; to != "" {
		if kind.Opens.Directed == "" {
			return Action{}, IllegalStep
		}
		a.State, a.Offeree = kind.Opens.Directed, to
	} else {
		a.State = kind.Opens.Open
	}
	if replaces, ok := ev.Fields[r.Revival.Tag]; ok {
		if !WellFormedID(replaces) {
			return Action{}, ReplacesMalformed
		}
		if lookup != nil && lookup(replaces) == PredecessorLive {
			return Action{}, ReplacesNotTerminal
		}
	}
	a.Deadline = unixField(ev.Fields[FieldDeadline])
	a.BidDeadline = unixField(ev.Fields[FieldBidDeadline])
	return a, Accepted
}

// Step checks an event on an existing action and returns the action after it. The action passed
// in is not modified.
func (r *Rules) Step(a Action, ev Event) (Action, Refusal) {
	if ev.Verb() == r.Confirmation.Verb {
		return a, ClientConfirm
	}
	kind := r.Kinds[ev.Kind()]
	if kind == nil {
		return a, UnknownKind
	}
	if _, ok := ev.Fields[r.Revival.Tag]; ok {
		return a, ReplacesNotOpener
	}
	if kind.IsTerminal(a.State) {
		return a, TerminalTask
	}
	if ev.Verb() == kind.Opens.Verb {
		return a, IllegalStep
	}
	if !kind.hasVerb(ev.Verb()) {
		return a, UnknownVerb
	}
	var t *Transition
	for i := range kind.Transitions {
		if kind.Transitions[i].Verb == ev.Verb() && kind.Transitions[i].from(kind, a.State) {
			t = &kind.Transitions[i]
			break
		}
	}
	if t == nil {
		return a, IllegalStep
	}
	if !a.holds(t.Who, ev) {
		return a, WrongSender
	}
	for _, field := range t.Requires {
		if ev.Fields[field] == "" {
			return a, MissingRequirement
		}
	}
	if t.BeforeDeadline && r.late(ev.ID, a.Deadline) || t.BeforeBidDeadline && r.late(ev.ID, a.BidDeadline) {
		return a, DeadlinePassed
	}
	next := a
	next.Bids = a.Bids
	switch {
	case t.AssigneeFrom != nil:
		author, ok := a.Bids[ev.Fields[t.AssigneeFrom.AuthorOf]]
		if !ok {
			return a, AcceptsNotABid
		}
		next.Assignee = author
	case t.From.single() != t.To && t.To != "" && !kind.IsTerminal(t.To) && a.Assignee == "":
		// accept and claim: the actor becomes the assignee.
		next.Assignee = ev.Sender
	}
	if ev.Verb() == "bid" {
		next.Bids = make(map[string]string, len(a.Bids)+1)
		for k, v := range a.Bids {
			next.Bids[k] = v
		}
		next.Bids[ev.ID] = ev.Sender
	}
	next.State = t.To
	return next, Accepted
}

// single returns the only state of a one-state source, else "".
func (s States) single() string {
	if len(s) == 1 {
		return s[0]
	}
	return ""
}

func (k *Kind) hasVerb(verb string) bool {
	for _, t := range k.Transitions {
		if t.Verb == verb {
			return true
		}
	}
	return false
}

// holds reports whether the event's sender holds role on the action.
func (a Action) holds(role string, ev Event) bool {
	switch role {
	case RoleSystem:
		return ev.System
	case RoleAnyone:
		return !ev.System && ev.Sender != ""
	case RoleOfferer:
		return !ev.System && ev.Sender == a.Offerer
	case RoleOfferee:
		return !ev.System && a.Offeree != "" && ev.Sender == a.Offeree
	case RoleAssignee:
		return !ev.System && a.Assignee != "" && ev.Sender == a.Assignee
	}
	return false
}

// late reports whether an event minted at the time of its id comes after deadline (unix s),
// beyond the tolerance. An id with no readable time is late for any deadline.
func (r *Rules) late(eventID string, deadline int64) bool {
	if deadline <= 0 {
		return false
	}
	ms, ok := IDTime(eventID)
	return !ok || ms > deadline*1000+r.DeadlineRule.ToleranceMS
}

// unixField reads a unix-seconds field; anything else bounds nothing.
func unixField(v string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// crockford maps a Crockford base32 character (case-insensitive, with the I/L→1 and O→0
// aliases) to its value.
func crockford(c byte) (int64, bool) {
	switch {
	case c >= '0' && c <= '9':
		return int64(c - '0'), true
	case c >= 'a' && c <= 'z':
		c -= 'a' - 'A'
	}
	switch c {
	case 'I', 'L':
		return 1, true
	case 'O':
		return 0, true
	case 'U':
		return 0, false
	}
	if c < 'A' || c > 'Z' {
		return 0, false
	}
	const alphabet = "ABCDEFGHJKMNPQRSTVWXYZ"
	i := strings.IndexByte(alphabet, c)
	if i < 0 {
		return 0, false
	}
	return int64(10 + i), true
}

// IDTime is the millisecond time a ULID-shaped event id carries in its first ten characters.
func IDTime(id string) (int64, bool) {
	if len(id) < 10 {
		return 0, false
	}
	var ms int64
	for i := 0; i < 10; i++ {
		v, ok := crockford(id[i])
		if !ok || (i == 0 && v > 7) {
			return 0, false
		}
		ms = ms<<5 | v
	}
	return ms, true
}

// WellFormedID reports whether s is shaped like an action id: 26 characters, ASCII letters and
// digits, whose first ten read as a time.
func WellFormedID(s string) bool {
	if len(s) != 26 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	_, ok := IDTime(s)
	return ok
}
