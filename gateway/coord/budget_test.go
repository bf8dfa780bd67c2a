package coord_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/palaver-chat/palaver/gateway/coord"
)

// TestTypedEventBudget: one DID filing typed events with 3.8 KB payloads is refused with
// FAIL ... LIMIT_REACHED at its coordination budget, long before the server-wide bounds, and
// another DID can still file.
func TestTypedEventBudget(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	payload := `{"description":"` + strings.Repeat("x", 3800) + `"}`
	file := func(who, event, ref string) *coord.Fail {
		t.Helper()
		tags := map[string]string{"+freeq.at/eventid": f.eventID(), "+freeq.at/event": event, "+freeq.at/ref": ref, "+freeq.at/payload": payload}
		_, fl := f.svc.File(ctx, coord.Tagmsg{SenderDID: who, Venue: "#pub", Tags: tags})
		return fl
	}
	var refused *coord.Fail
	filed := 0
	for task := 0; task < 10 && refused == nil; task++ {
		ref := fmt.Sprintf("t-%d", task)
		if refused = file(f.alice.did, "task_request", ref); refused != nil {
			break
		}
		filed++
		for i := 0; i < 90; i++ {
			if refused = file(f.alice.did, "task_update", ref); refused != nil {
				break
			}
			filed++
		}
	}
	if refused == nil {
		t.Fatalf("one DID filed %d events of 3.8 KB", filed)
	}
	if refused.Code != "LIMIT_REACHED" || !strings.Contains(refused.Text, "budget") {
		t.Fatalf("refusal %v", refused)
	}
	if filed > 300 {
		t.Fatalf("refused only after %d events (%d KB)", filed, filed*38/10)
	}
	if fl := file(f.bob.did, "task_request", "t-bob"); fl != nil {
		t.Fatalf("another DID: %v", fl)
	}
}
