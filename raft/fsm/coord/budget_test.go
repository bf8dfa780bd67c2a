package coord

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/fsmtest"
)

// withBudget runs a test under a smaller coordination budget.
func withBudget(t *testing.T, b CoordBudget) {
	t.Helper()
	old := coordBudget
	coordBudget = b
	t.Cleanup(func() { coordBudget = old })
}

// unbounded is a budget no test reaches.
var unbounded = CoordBudget{DIDItems: 1 << 30, DIDBytes: 1 << 40, VenueItems: 1 << 30, VenueBytes: 1 << 40,
	TotalItems: 1 << 30, TotalBytes: 1 << 40, TimelineBytes: 1 << 40, TimelineTotalBytes: 1 << 40}

// checkBudget verifies that the incremental accounting equals the one derived from the state.
func checkBudget(st *fsm.State) error {
	if section.Of(st) == nil || section.Of(st).budget == nil {
		return nil
	}
	got := section.Of(st).budget
	fresh := &Coord{Tasks: section.Of(st).Tasks, Actions: section.Of(st).Actions, Timeline: section.Of(st).Timeline}
	want := fresh.usage()
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("coordination budget accounting drifted:\n got %+v\nwant %+v", *got, *want)
	}
	return nil
}

// usageOf reads the accounting of the harness's state.
func usageOf(h *fsmtest.Harness) (u coordUsage) {
	h.Read(func(st *fsm.State) {
		if section.Of(st) != nil {
			u = *section.Of(st).usage()
		}
	})
	return u
}

// coordJSON is the coordination state, encoded.
func coordJSON(t *testing.T, h *fsmtest.Harness) (s string) {
	h.Read(func(st *fsm.State) { s = jsonString(t, section.Of(st)) })
	return s
}

// bigPayload is a task payload of about 3.8 KB, as an attacker sends.
var bigPayload = `{"description":"` + strings.Repeat("x", 3800) + `"}`

func taskRequest(venue, did, ref string) FileCoordEvent {
	return FileCoordEvent{Venue: venue, EventID: "e-" + ref, Type: EventTaskRequest, ActorDID: did, Payload: bigPayload, Ref: ref}
}

func taskUpdate(venue, did, ref string, n int, typ string) FileCoordEvent {
	return FileCoordEvent{Venue: venue, EventID: fmt.Sprintf("e-%s-%d", ref, n), Type: typ, ActorDID: did, Payload: bigPayload, Ref: ref}
}

// TestCoordBudgetPerDID: one DID filing big task events stops at its budget with
// ErrCoordBudget, changing nothing; another DID is unaffected; finished tasks of the DID make room.
func TestCoordBudgetPerDID(t *testing.T) {
	withBudget(t, CoordBudget{DIDItems: 1000, DIDBytes: 64 << 10, VenueItems: 1 << 20, VenueBytes: 1 << 30,
		TotalItems: 1 << 20, TotalBytes: 1 << 30, TimelineBytes: 1 << 30, TimelineTotalBytes: 1 << 30})
	h := fsmtest.NewHarness(t)
	h.OK(taskRequest("#c", didAlice, "t0"))
	refused := -1
	for i := 1; i < 100; i++ {
		r := h.Do(taskUpdate("#c", didAlice, "t0", i, EventTaskUpdate))
		if r.Code == ErrCoordBudget {
			refused = i
			break
		}
		if r.Code != fsm.OK {
			t.Fatalf("update %d: %v", i, r.Code)
		}
	}
	if refused < 0 {
		t.Fatal("one DID filed 100 events of 3.8 KB under a 64 KiB budget")
	}
	before := coordJSON(t, h)
	if r := h.Do(taskRequest("#c", didAlice, "t-more")); r.Code != ErrCoordBudget {
		t.Fatalf("a new task past the budget: %v, want %v", r.Code, ErrCoordBudget)
	}
	if coordJSON(t, h) != before {
		t.Fatal("a refused command changed the state")
	}
	if u := usageOf(h).did[didAlice]; u.bytes > 64<<10 {
		t.Fatalf("alice holds %d bytes, budget %d", u.bytes, 64<<10)
	}
	// Another DID has its own budget.
	h.OK(taskRequest("#c", didBob, "t-bob"))
	// A finished task of alice's is forgotten to make room for her next one.
	if r := h.Do(taskUpdate("#c", didAlice, "t0", 999, EventTaskComplete)); r.Code != ErrCoordBudget {
		t.Fatalf("completing at the budget: %v", r.Code) // the event itself does not fit
	}
	h.Read(func(st *fsm.State) { section.Of(st).Tasks["t0"].Status = TaskComplete }) // as an accepted completion would
	h.OK(taskRequest("#c", didAlice, "t1"))
	h.Read(func(st *fsm.State) {
		if section.Of(st).Tasks["t0"] != nil || section.Of(st).Tasks["t-bob"] == nil {
			t.Error("making room forgot the wrong task")
		}
		if err := checkBudget(st); err != nil {
			t.Error(err)
		}
	})
}

// TestCoordBudgetPerVenue: many DIDs in one venue stop at the venue's budget; another venue is
// unaffected.
func TestCoordBudgetPerVenue(t *testing.T) {
	withBudget(t, CoordBudget{DIDItems: 1000, DIDBytes: 1 << 30, VenueItems: 1 << 20, VenueBytes: 40 << 10,
		TotalItems: 1 << 20, TotalBytes: 1 << 30, TimelineBytes: 1 << 30, TimelineTotalBytes: 1 << 30})
	h := fsmtest.NewHarness(t)
	refused := false
	for i := range 100 {
		r := h.Do(taskRequest("#c", fmt.Sprintf("did:key:z%d", i), fmt.Sprintf("t%d", i)))
		if r.Code == ErrCoordBudget {
			refused = true
			break
		}
	}
	if !refused {
		t.Fatal("100 DIDs filed 3.8 KB tasks in one venue under a 40 KiB budget")
	}
	if u := usageOf(h).venue["#c"]; u.bytes > 40<<10 {
		t.Fatalf("#c holds %d bytes", u.bytes)
	}
	h.OK(taskRequest("#d", "did:key:zother", "t-other"))
}

// TestCoordBudgetActs: act events are charged to their sender too.
func TestCoordBudgetActs(t *testing.T) {
	withBudget(t, CoordBudget{DIDItems: 1000, DIDBytes: 24 << 10, VenueItems: 1 << 20, VenueBytes: 1 << 30,
		TotalItems: 1 << 20, TotalBytes: 1 << 30, TimelineBytes: 1 << 30, TimelineTotalBytes: 1 << 30})
	h := fsmtest.NewHarness(t)
	title := strings.Repeat("t", 4000)
	refused := false
	for i := range 50 {
		r := h.Do(FileAct{Venue: "#ops", EventID: fmt.Sprintf("01M16E7TC0OFFER%011d", i), From: didAlice,
			Fields: actFields("handoff", "offer", "", "act-to", didBob, "act-title", title)})
		if r.Code == ErrCoordBudget {
			refused = true
			break
		}
		if r.Code != fsm.OK {
			t.Fatalf("offer %d: %v", i, r.Code)
		}
	}
	if !refused {
		t.Fatal("50 offers with 4 KB titles fit a 24 KiB budget")
	}
	h.Read(func(st *fsm.State) {
		if err := checkBudget(st); err != nil {
			t.Error(err)
		}
	})
}

// TestCoordTimelineBudget: a venue's timeline and all timelines stay within their bytes.
func TestCoordTimelineBudget(t *testing.T) {
	withBudget(t, CoordBudget{DIDItems: 1 << 20, DIDBytes: 1 << 30, VenueItems: 1 << 20, VenueBytes: 1 << 30,
		TotalItems: 1 << 20, TotalBytes: 1 << 30, TimelineBytes: 32 << 10, TimelineTotalBytes: 96 << 10})
	h := fsmtest.NewHarness(t)
	for i := range 200 {
		// Events about no task land on the timeline only.
		h.OK(FileCoordEvent{Venue: fmt.Sprintf("#v%d", i%10), EventID: fmt.Sprintf("n%d", i), Type: "note",
			ActorDID: didAlice, Payload: bigPayload})
	}
	u := usageOf(h)
	if u.timelineTotal > 96<<10 {
		t.Fatalf("timelines hold %d bytes", u.timelineTotal)
	}
	for v, n := range u.timeline {
		if n > 32<<10 {
			t.Fatalf("%s holds %d bytes", v, n)
		}
	}
	h.Read(func(st *fsm.State) {
		if got := section.Of(st).Timeline["#v9"]; len(got) == 0 || got[len(got)-1].EventID != "n199" {
			t.Error("the newest item was dropped")
		}
		if err := checkBudget(st); err != nil {
			t.Error(err)
		}
	})
}

// TestCoordBudgetWorstCase fills the state with twice as many DIDs as the total budget allows,
// every one at its own budget with tasks in progress (never forgotten): the total stays within
// TotalBytes, and the heap the state takes stays within twice what is accounted, the factor
// agents.md states. The budget is scaled down 32 times from the default, the same shape.
func TestCoordBudgetWorstCase(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 2.5 MiB of coordination state")
	}
	b := CoordBudget{DIDItems: DefaultCoordBudget.DIDItems, DIDBytes: DefaultCoordBudget.DIDBytes / 32,
		VenueItems: DefaultCoordBudget.VenueItems, VenueBytes: DefaultCoordBudget.VenueBytes / 32,
		TotalItems: DefaultCoordBudget.TotalItems, TotalBytes: DefaultCoordBudget.TotalBytes / 32,
		TimelineBytes: DefaultCoordBudget.TimelineBytes / 32, TimelineTotalBytes: DefaultCoordBudget.TimelineTotalBytes / 32}
	withBudget(t, b)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heap0 := ms.HeapAlloc
	h := fsmtest.NewHarness(t)
	dids := 2 * b.TotalBytes / b.DIDBytes
	refusedDIDs := 0
	for d := range dids {
		did := fmt.Sprintf("did:key:zAttacker%04d", d)
		venue := fmt.Sprintf("#v%d", d%64)
		ref := fmt.Sprintf("t%d", d)
		if r := h.Do(taskRequest(venue, did, ref)); r.Code == ErrCoordBudget {
			refusedDIDs++
			continue
		}
		for i := 1; ; i++ {
			if r := h.Do(taskUpdate(venue, did, ref, i, EventTaskUpdate)); r.Code != fsm.OK {
				break
			}
		}
	}
	u := usageOf(h)
	if u.total.bytes > b.TotalBytes || u.timelineTotal > b.TimelineTotalBytes {
		t.Fatalf("state holds %d + %d bytes, budget %d + %d", u.total.bytes, u.timelineTotal, b.TotalBytes, b.TimelineTotalBytes)
	}
	for did, du := range u.did {
		if du.bytes > b.DIDBytes || du.items > b.DIDItems {
			t.Fatalf("%s holds %+v", did, du)
		}
	}
	if refusedDIDs == 0 {
		t.Fatal("twice the DIDs the total allows were all admitted")
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heap := int64(ms.HeapAlloc) - int64(heap0)
	accounted := int64(u.total.bytes + u.timelineTotal)
	t.Logf("%d DIDs, %d refused; accounted %d bytes, heap %d bytes", dids, refusedDIDs, accounted, heap)
	if limit := 2 * int64(b.TotalBytes+b.TimelineTotalBytes); heap > limit {
		t.Fatalf("the state takes %d bytes of heap, more than %d (2 × the budget)", heap, limit)
	}
	runtime.KeepAlive(h)
	h.Read(func(st *fsm.State) {
		if err := checkBudget(st); err != nil {
			t.Error(err)
		}
	})
}

// TestDefaultCoordBudgetArithmetic keeps the defaults consistent with what agents.md states:
// the DID and venue budgets divide the total, and the worst case fits the stated memory.
func TestDefaultCoordBudgetArithmetic(t *testing.T) {
	b := DefaultCoordBudget
	if b.DIDBytes > b.VenueBytes || b.VenueBytes > b.TotalBytes || b.TimelineBytes > b.TimelineTotalBytes {
		t.Fatalf("budgets out of order: %+v", b)
	}
	// Stated in agents.md: 80 MiB accounted at most, whatever the number of DIDs.
	if got := b.TotalBytes + b.TimelineTotalBytes; got != 80<<20 {
		t.Fatalf("the worst case is %d bytes; update agents.md", got)
	}
	if n := b.TotalBytes / b.DIDBytes; n != 64 {
		t.Fatalf("%d DIDs fill the total; update agents.md", n)
	}
}
