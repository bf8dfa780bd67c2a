package coord

import (
	"maps"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/coord/act"
)

// FileAct files an ACT event (a TAGMSG with +freeq.at/act tags) that its gateway has already
// verified (signature, sender, venue). Apply runs the act checker against the action as the log
// has it, so that of two racing claims only the first wins on every node.
type FileAct struct {
	Venue   string `json:"venue"`
	EventID string `json:"event_id"`
	From    string `json:"from"`
	// Fields are the act and act-* tags, keyed without the +freeq.at/ prefix.
	Fields    map[string]string `json:"fields"`
	Canonical string            `json:"canonical,omitempty"`
	Signature string            `json:"signature,omitempty"`
	// Receipt is the server's confirm receipt, prepared and signed by the proposer; kept only
	// when the event is filed.
	Receipt *ActReceipt `json:"receipt,omitempty"`
}

// SystemActEvent is a step the server itself takes on an action (expire, auto-accept).
type SystemActEvent struct {
	ActID   string `json:"act_id"`
	Verb    string `json:"verb"`
	EventID string `json:"event_id"`
	// From is the server's DID.
	From string `json:"from"`
}

func (FileAct) CommandType() fsm.CommandType        { return TypeFileAct }
func (SystemActEvent) CommandType() fsm.CommandType { return TypeSystemActEvent }

func (a *tx) fileAct(c FileAct) fsm.Result {
	if c.Venue == "" || len(c.Venue) > 600 || !validID(c.EventID) || !validDID(c.From) || len(c.Fields) == 0 ||
		len(c.Fields) > MaxActFields || len(c.Canonical) > 4*MaxCoordValue || len(c.Signature) > 256 {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	for k, v := range c.Fields {
		if k != act.FieldKind && (len(k) < 5 || k[:4] != "act-") || !validValue(v) {
			return fsm.Result{Code: fsm.ErrInvalid}
		}
	}
	return a.applyAct(c.Venue, act.Event{ID: c.EventID, Sender: c.From, Fields: c.Fields}, c.Canonical, c.Signature, c.Receipt)
}

func (a *tx) systemActEvent(c SystemActEvent) fsm.Result {
	co := a.coord()
	ac := co.Actions[c.ActID]
	if ac == nil || !validID(c.EventID) || !validDID(c.From) {
		return fsm.Result{Code: fsm.ErrInvalid}
	}
	fields := map[string]string{act.FieldKind: ac.Kind, act.FieldVerb: c.Verb, act.FieldID: c.ActID}
	return a.applyAct(ac.Venue, act.Event{ID: c.EventID, Sender: c.From, System: true, Fields: fields}, "", "", nil)
}

// actVerdict is what filing an act event would do: the result code and, when fsm.OK, the action
// after it (Opened for a new one) and whether an opener's act-replaces names an unknown action.
type actVerdict struct {
	Code            fsm.Code
	Next            act.Action
	Opened          bool
	ReplacesUnknown bool
}

// judgeAct runs the act checker for ev in venue against co without changing it. co may be nil.
func judgeAct(co *Coord, venue string, ev act.Event) actVerdict {
	if co == nil {
		co = &Coord{}
	}
	if _, dup := co.ActEvents[ev.ID]; dup {
		return actVerdict{Code: ErrActImmutableEvent}
	}
	if _, dup := co.Actions[ev.ID]; dup {
		return actVerdict{Code: ErrActImmutableEvent}
	}
	rules := act.Default
	if ev.Verb() == rules.Confirmation.Verb {
		return actVerdict{Code: refusalCodes[act.ClientConfirm]}
	}
	if act.IsOpener(ev) {
		if runningActionsOf(co, ev.Sender) >= MaxRunningActionsPerDID {
			return actVerdict{Code: ErrCoordFull}
		}
		unknown := false
		opened, refused := rules.Open(ev, func(id string) act.Predecessor {
			prev := co.Actions[id]
			switch {
			case prev == nil:
				unknown = true
				return act.PredecessorUnknown
			case rules.Kinds[prev.Kind] != nil && rules.Kinds[prev.Kind].IsTerminal(prev.State):
				return act.PredecessorFinished
			}
			return act.PredecessorLive
		})
		if refused != act.Accepted {
			return actVerdict{Code: refusalCodes[refused]}
		}
		return actVerdict{Code: fsm.OK, Next: opened, Opened: true, ReplacesUnknown: unknown}
	}
	ac := co.Actions[ev.Fields[act.FieldID]]
	switch {
	case ac == nil:
		return actVerdict{Code: ErrActUnknownTask}
	case ac.Venue != venue:
		return actVerdict{Code: ErrActWrongVenue}
	case ev.Kind() != ac.Kind && rules.Kinds[ev.Kind()] != nil:
		return actVerdict{Code: refusalCodes[act.IllegalStep]}
	case len(ac.Events) >= MaxActEvents:
		return actVerdict{Code: ErrCoordFull}
	}
	next, refused := rules.Step(ac.Action, ev)
	if refused != act.Accepted {
		return actVerdict{Code: refusalCodes[refused]}
	}
	return actVerdict{Code: fsm.OK, Next: next}
}

func (a *tx) applyAct(venue string, ev act.Event, canonical, sig string, receipt *ActReceipt) fsm.Result {
	co := a.coord()
	v := judgeAct(co, venue, ev)
	if v.Code != fsm.OK {
		return fsm.Result{Code: v.Code}
	}
	if receipt != nil && (!validID(receipt.EventID) || len(receipt.Canonical) > 4*MaxCoordValue || len(receipt.Signature) > 256) {
		receipt = nil
	}
	filed := ActEvent{
		EventID: ev.ID, Verb: ev.Verb(), ActorDID: ev.Sender, Fields: maps.Clone(ev.Fields), Canonical: canonical,
		Signature: sig, ConfirmState: ConfirmConfirmed, Receipt: receipt, State: v.Next.State, Timestamp: a.Time(),
	}
	var ac *ActAction
	var cost usage
	keep := ""
	if v.Opened {
		if len(co.Actions) >= MaxActions && !hasFinishedAction(co) {
			return fsm.Result{Code: ErrCoordFull}
		}
		ac = &ActAction{Action: v.Next, Venue: venue, Caps: ev.Fields[act.FieldCaps], Title: ev.Fields[act.FieldTitle],
			Replaces: ev.Fields[act.FieldReplaces], ReplacesUnknown: v.ReplacesUnknown, Created: a.Time()}
		cost = actionHeadCost(ac)
	} else {
		ac = co.Actions[ev.Fields[act.FieldID]]
		next := *ac
		next.Action = v.Next
		cost = actionHeadCost(&next).minus(actionHeadCost(ac)) // the head grows with bids and the assignee
		keep = "a:" + ac.ID
	}
	payer := ev.Sender
	if ev.System {
		payer = ""
	}
	if !a.admit(payer, venue, cost.plus(actEventUsage(filed)), keep) {
		return fsm.Result{Code: ErrCoordBudget}
	}
	if v.Opened {
		if len(co.Actions) >= MaxActions {
			a.evictFinishedAction()
		}
		if co.Actions == nil {
			co.Actions = map[string]*ActAction{}
		}
		co.Actions[ac.ID] = ac
		if !finished(ac.Kind, ac.State) {
			countRunning(co, ac.Offerer, 1)
		}
		co.chargeUnit(ac.Offerer, venue, actionHeadCost(ac), 1)
	} else {
		if !finished(ac.Kind, ac.State) && finished(ac.Kind, v.Next.State) {
			countRunning(co, ac.Offerer, -1)
		}
		co.chargeUnit(ac.Offerer, venue, actionHeadCost(ac), -1)
		ac.Action = v.Next
		co.chargeUnit(ac.Offerer, venue, actionHeadCost(ac), 1)
	}
	if co.ActEvents == nil {
		co.ActEvents = map[string]string{}
	}
	co.ActEvents[ev.ID] = ac.ID
	if receipt != nil {
		co.ActEvents[receipt.EventID] = ac.ID
	}
	ac.Updated = a.Time()
	ac.Events = append(ac.Events, filed)
	co.chargeUnit(ev.Sender, venue, actEventUsage(filed), 1)
	a.record(venue, TimelineItem{Category: CategoryCoordination, Event: "act:" + ev.Verb(), ActorDID: ev.Sender,
		RefID: ac.ID, EventID: ev.ID, Signature: sig,
		Details: map[string]string{"kind": ac.Kind, "state": ac.State, "act_id": ac.ID}})
	return fsm.Result{Code: fsm.OK}
}

// evictFinishedAction makes room for a new action by dropping the finished one updated longest
// ago (ties by id); false when every action is still running.
func (a *tx) evictFinishedAction() bool {
	co := a.coord()
	var oldest *ActAction
	for _, ac := range co.Actions {
		k := act.Default.Kinds[ac.Kind]
		if k == nil || !k.IsTerminal(ac.State) {
			continue
		}
		if oldest == nil || ac.Updated < oldest.Updated || ac.Updated == oldest.Updated && ac.ID < oldest.ID {
			oldest = ac
		}
	}
	if oldest == nil {
		return false
	}
	a.forgetAction(oldest)
	return true
}

// hasFinishedAction reports whether some action is finished (evictFinishedAction would succeed).
func hasFinishedAction(co *Coord) bool {
	for _, ac := range co.Actions {
		if finished(ac.Kind, ac.State) {
			return true
		}
	}
	return false
}

// runningActionsOf counts the actions did offered that are not finished. The counts are derived
// from the actions (never encoded) and rebuilt on first use after a restore.
func runningActionsOf(co *Coord, did string) int {
	if co.running == nil {
		co.running = map[string]int{}
		for _, ac := range co.Actions {
			if !finished(ac.Kind, ac.State) {
				co.running[ac.Offerer]++
			}
		}
	}
	return co.running[did]
}

// finished reports whether state ends an action of kind.
func finished(kind, state string) bool {
	k := act.Default.Kinds[kind]
	return k == nil || k.IsTerminal(state)
}

// countRunning moves did's count of running actions by delta.
func countRunning(co *Coord, did string, delta int) {
	runningActionsOf(co, did)
	if co.running[did] += delta; co.running[did] <= 0 {
		delete(co.running, did)
	}
}
