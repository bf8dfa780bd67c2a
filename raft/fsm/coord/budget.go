package coord

import (
	"cmp"
	"slices"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// Budgets of the coordination state. A DID costs nothing to mint, so the tasks and actions in
// the replicated state are budgeted per DID, per venue and in total, by count and by bytes:
//
//   - every task, task event, evidence item, action and act event is an item, charged to the DID
//     that filed it and to its venue; its bytes are its strings plus a fixed overhead per item,
//     close to what it costs in memory;
//   - a command that would take its DID, its venue or the total past a budget first makes room
//     by forgetting finished tasks and actions, oldest first: the DID's own for the DID's budget,
//     the venue's for the venue's, any for the total; when forgetting every finished one would
//     not make room it is refused with ErrCoordBudget (FAIL ... LIMIT_REACHED) and changes
//     nothing. Work in progress is never forgotten: refusing is right for it, since dropping a
//     task someone is working on would lose it silently.
//   - a venue's audit timeline is a ring, by count and by bytes, and all timelines together are
//     bounded in bytes: the oldest items drop first (of the venue whose oldest item is oldest).
//     Eviction fits an audit log, whose recent items matter, and refusing would refuse act
//     events and task events that are otherwise in budget.
//
// The counters are derived from the state (never encoded; rebuilt on first use after a restore),
// so snapshots are unchanged.

// ErrCoordBudget refuses a coordination command that would take its DID, its venue or the whole
// coordination state past its budget when no finished task or action can make room. fsm.Result code
// 70 is the budgets'.
const ErrCoordBudget fsm.Code = 70

// CoordBudget is the coordination state's budget.
type CoordBudget struct {
	DIDItems, DIDBytes     int // per DID: what it filed in tasks and actions
	VenueItems, VenueBytes int // per venue: its tasks and actions
	TotalItems, TotalBytes int // all tasks and actions
	// TimelineBytes bounds one venue's timeline (MaxTimeline bounds its items);
	// TimelineTotalBytes every timeline together.
	TimelineBytes, TimelineTotalBytes int
}

// DefaultCoordBudget is the budget every node applies. Changing it changes Apply: a new value
// must come with the release that every node of a cluster runs.
var DefaultCoordBudget = CoordBudget{
	DIDItems: 2000, DIDBytes: 1 << 20,
	VenueItems: 20000, VenueBytes: 8 << 20,
	TotalItems: 200000, TotalBytes: 64 << 20,
	TimelineBytes: 256 << 10, TimelineTotalBytes: 16 << 20,
}

// coordBudget is the budget Apply enforces: DefaultCoordBudget, smaller in tests.
var coordBudget = DefaultCoordBudget

// Fixed per-item costs: the struct, its slice or map slot and string headers.
const (
	taskOverhead     = 256
	taskEventCost    = 160
	evidenceCost     = 112
	actionOverhead   = 320
	actEventCost     = 288 // the event, its fields map and its ActEvents entries
	actFieldCost     = 48
	timelineItemCost = 224
)

// usage is what one DID or venue, or everything, holds.
type usage struct{ items, bytes int }

func (u usage) plus(v usage) usage  { return usage{u.items + v.items, u.bytes + v.bytes} }
func (u usage) minus(v usage) usage { return usage{u.items - v.items, u.bytes - v.bytes} }

// coordUsage is the derived accounting of Coord: tasks and actions per DID, per venue and in
// total, and timeline bytes per venue and in total.
type coordUsage struct {
	did, venue    map[string]usage
	total         usage
	timeline      map[string]int
	timelineTotal int
}

// charge is one unit's cost: per DID that filed part of it, its venue and the total.
type charge struct {
	venue string
	dids  map[string]usage
	total usage
}

func (c *charge) add(did string, u usage) {
	if c.dids == nil {
		c.dids = map[string]usage{}
	}
	c.dids[did] = c.dids[did].plus(u)
	c.total = c.total.plus(u)
}

func taskHeadCost(t *CoordTask) usage {
	return usage{1, taskOverhead + len(t.TaskID) + len(t.Description) + len(t.ActorDID) + len(t.Channel)}
}

func taskEventUsage(e TaskEvent) usage {
	return usage{1, taskEventCost + len(e.EventID) + len(e.EventType) + len(e.ActorDID) + len(e.Payload) + len(e.Signature)}
}

func evidenceUsage(e TaskEvidence) usage {
	return usage{1, evidenceCost + len(e.EventID) + len(e.Type) + len(e.Payload)}
}

func actionHeadCost(ac *ActAction) usage {
	n := actionOverhead + len(ac.ID) + len(ac.Kind) + len(ac.State) + len(ac.Offerer) + len(ac.Offeree) + len(ac.Assignee) +
		len(ac.Venue) + len(ac.Caps) + len(ac.Title) + len(ac.Replaces)
	for k, v := range ac.Bids {
		n += actFieldCost + len(k) + len(v)
	}
	return usage{1, n}
}

func actEventUsage(e ActEvent) usage {
	n := actEventCost + len(e.EventID)*2 + len(e.Verb) + len(e.ActorDID) + len(e.Canonical) + len(e.Signature) +
		len(e.ConfirmState) + len(e.State)
	for k, v := range e.Fields {
		n += actFieldCost + len(k) + len(v)
	}
	if r := e.Receipt; r != nil {
		n += actEventCost + len(r.EventID)*2 + len(r.From) + len(r.Canonical) + len(r.Signature)
	}
	return usage{1, n}
}

func timelineItemBytes(it TimelineItem) int {
	n := timelineItemCost + len(it.Category) + len(it.Event) + len(it.ActorDID) + len(it.RefID) + len(it.Signature) + len(it.EventID)
	for k, v := range it.Details {
		n += actFieldCost + len(k) + len(v)
	}
	return n
}

func taskCharge(t *CoordTask) charge {
	c := charge{venue: t.Channel}
	c.add(t.ActorDID, taskHeadCost(t))
	// Evidence is charged to the filer of its evidence_attach event: the two are filed together,
	// so the k-th evidence item is the k-th such event's.
	k := 0
	for _, e := range t.Events {
		c.add(e.ActorDID, taskEventUsage(e))
		if e.EventType == EventEvidenceAttach && k < len(t.Evidence) {
			c.add(e.ActorDID, evidenceUsage(t.Evidence[k]))
			k++
		}
	}
	for ; k < len(t.Evidence); k++ {
		c.add(t.ActorDID, evidenceUsage(t.Evidence[k]))
	}
	return c
}

func actionCharge(ac *ActAction) charge {
	c := charge{venue: ac.Venue}
	c.add(ac.Offerer, actionHeadCost(ac))
	for _, e := range ac.Events {
		c.add(e.ActorDID, actEventUsage(e))
	}
	return c
}

// usage returns the accounting, deriving it from the state on first use.
func (co *Coord) usage() *coordUsage {
	if co.budget != nil {
		return co.budget
	}
	u := &coordUsage{did: map[string]usage{}, venue: map[string]usage{}, timeline: map[string]int{}}
	co.budget = u
	for _, t := range co.Tasks {
		u.apply(taskCharge(t), 1)
	}
	for _, ac := range co.Actions {
		u.apply(actionCharge(ac), 1)
	}
	for v, items := range co.Timeline {
		for _, it := range items {
			n := timelineItemBytes(it)
			u.timeline[v] += n
			u.timelineTotal += n
		}
	}
	return u
}

// apply adds (sign 1) or removes (sign -1) a charge.
func (u *coordUsage) apply(c charge, sign int) {
	for did, d := range c.dids {
		if sign > 0 {
			u.did[did] = u.did[did].plus(d)
		} else if u.did[did] = u.did[did].minus(d); u.did[did].items <= 0 {
			delete(u.did, did)
		}
	}
	if sign > 0 {
		u.venue[c.venue] = u.venue[c.venue].plus(c.total)
		u.total = u.total.plus(c.total)
		return
	}
	if u.venue[c.venue] = u.venue[c.venue].minus(c.total); u.venue[c.venue].items <= 0 {
		delete(u.venue, c.venue)
	}
	u.total = u.total.minus(c.total)
}

func fits(u usage, items, bytes int) bool { return u.items <= items && u.bytes <= bytes }

// finishedUnit is a task or an action that may be forgotten to make room.
type finishedUnit struct {
	at     int64
	id     string
	task   *CoordTask
	action *ActAction
	charge charge
}

// finishedUnits lists the finished tasks and actions, oldest first (tasks by creation, actions by
// last update; ties by id), each with its charge.
func (co *Coord) finishedUnits() []finishedUnit {
	var list []finishedUnit
	for _, t := range co.Tasks {
		if t.Status != TaskInProgress {
			list = append(list, finishedUnit{at: t.CreatedAt, id: "t:" + t.TaskID, task: t})
		}
	}
	for _, ac := range co.Actions {
		if finished(ac.Kind, ac.State) {
			list = append(list, finishedUnit{at: ac.Updated, id: "a:" + ac.ID, action: ac})
		}
	}
	slices.SortFunc(list, func(a, b finishedUnit) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.id, b.id))
	})
	return list
}

// admit makes room for cost, filed by did in venue: it forgets finished tasks and actions until
// the DID, the venue and the total fit their budgets, and reports false (having changed nothing)
// when they cannot all fit. keep names the task or action the cost is added to, never forgotten.
// An empty did is the server's own step (expire, auto-accept): always admitted (and charged), as
// each action takes at most a few of them and they finish actions, which makes room.
func (a *tx) admit(did, venue string, cost usage, keep string) bool {
	if did == "" {
		return true
	}
	co := a.coord()
	u := co.usage()
	b := coordBudget
	needDID := u.did[did].plus(cost)
	needVenue := u.venue[venue].plus(cost)
	needTotal := u.total.plus(cost)
	if fits(needDID, b.DIDItems, b.DIDBytes) && fits(needVenue, b.VenueItems, b.VenueBytes) &&
		fits(needTotal, b.TotalItems, b.TotalBytes) {
		return true
	}
	var drop []finishedUnit
	units := co.finishedUnits()
	taken := make([]bool, len(units))
	// One pass per budget, narrowest first; a unit forgotten for one frees the others too.
	for pass := 0; pass < 3; pass++ {
		for i := range units {
			var over bool
			switch pass {
			case 0:
				over = !fits(needDID, b.DIDItems, b.DIDBytes)
			case 1:
				over = !fits(needVenue, b.VenueItems, b.VenueBytes)
			default:
				over = !fits(needTotal, b.TotalItems, b.TotalBytes)
			}
			if !over {
				break
			}
			un := &units[i]
			if taken[i] || un.id == keep {
				continue
			}
			if un.task != nil {
				un.charge = taskCharge(un.task)
			} else {
				un.charge = actionCharge(un.action)
			}
			if pass == 0 && un.charge.dids[did].items == 0 || pass == 1 && un.charge.venue != venue {
				continue
			}
			taken[i] = true
			drop = append(drop, *un)
			needDID = needDID.minus(un.charge.dids[did])
			if un.charge.venue == venue {
				needVenue = needVenue.minus(un.charge.total)
			}
			needTotal = needTotal.minus(un.charge.total)
		}
	}
	if !fits(needDID, b.DIDItems, b.DIDBytes) || !fits(needVenue, b.VenueItems, b.VenueBytes) ||
		!fits(needTotal, b.TotalItems, b.TotalBytes) {
		return false
	}
	for _, un := range drop {
		if un.task != nil {
			a.forgetTask(un.task)
		} else {
			a.forgetAction(un.action)
		}
	}
	return true
}

// chargeUnit adds (sign 1) or removes (sign -1) what one item of venue filed by did costs.
func (co *Coord) chargeUnit(did, venue string, cost usage, sign int) {
	c := charge{venue: venue}
	c.add(did, cost)
	co.usage().apply(c, sign)
}

// forgetTask removes a task and its cost.
func (a *tx) forgetTask(t *CoordTask) {
	co := a.coord()
	co.usage().apply(taskCharge(t), -1)
	delete(co.Tasks, t.TaskID)
}

// forgetAction removes an action, its event ids and its cost.
func (a *tx) forgetAction(ac *ActAction) {
	co := a.coord()
	co.usage().apply(actionCharge(ac), -1)
	for _, e := range ac.Events {
		delete(co.ActEvents, e.EventID)
		if e.Receipt != nil {
			delete(co.ActEvents, e.Receipt.EventID)
		}
	}
	if !finished(ac.Kind, ac.State) {
		countRunning(co, ac.Offerer, -1)
	}
	delete(co.Actions, ac.ID)
}

// fitTimeline makes room in venue's timeline for an item of n bytes: the venue's oldest items
// drop past TimelineBytes, and past TimelineTotalBytes the oldest item of the venue whose oldest
// item is oldest (ties by venue). It returns the venue's list after the drops.
func (a *tx) fitTimeline(venue string, n int) []TimelineItem {
	co := a.coord()
	u := co.usage()
	b := coordBudget
	list := co.Timeline[venue]
	dropped := 0
	for len(list) > dropped && u.timeline[venue]+n > b.TimelineBytes {
		a.dropTimelineBytes(venue, timelineItemBytes(list[dropped]))
		dropped++
	}
	if dropped > 0 {
		list = append(list[:0:0], list[dropped:]...)
		a.setTimeline(venue, list)
	}
	for u.timelineTotal+n > b.TimelineTotalBytes {
		oldest, at := "", int64(0)
		for v, items := range co.Timeline {
			if len(items) == 0 {
				continue
			}
			if t := items[0].Timestamp; oldest == "" || t < at || t == at && v < oldest {
				oldest, at = v, t
			}
		}
		if oldest == "" {
			break
		}
		items := co.Timeline[oldest]
		a.dropTimelineBytes(oldest, timelineItemBytes(items[0]))
		a.setTimeline(oldest, append(items[:0:0], items[1:]...))
	}
	return co.Timeline[venue]
}

func (a *tx) dropTimelineBytes(venue string, n int) {
	u := a.coord().usage()
	u.timelineTotal -= n
	if u.timeline[venue] -= n; u.timeline[venue] <= 0 {
		delete(u.timeline, venue)
	}
}

func (a *tx) setTimeline(venue string, list []TimelineItem) {
	co := a.coord()
	if len(list) == 0 {
		delete(co.Timeline, venue)
		return
	}
	co.Timeline[venue] = list
}

// forgetTimeline drops a whole venue's timeline and its bytes.
func (a *tx) forgetTimeline(venue string) {
	co := a.coord()
	u := co.usage()
	u.timelineTotal -= u.timeline[venue]
	delete(u.timeline, venue)
	delete(co.Timeline, venue)
}

// addTimelineBytes counts an item appended to venue's timeline.
func (a *tx) addTimelineBytes(venue string, n int) {
	u := a.coord().usage()
	u.timeline[venue] += n
	u.timelineTotal += n
}
