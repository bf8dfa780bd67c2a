package eventstore

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// walkFixture stores 1,200 messages four per second (two of them in the same millisecond), so
// pages of 50 end in the middle of a second.
func walkFixture(t *testing.T) (*Store, []string) {
	t.Helper()
	s, _ := openTestStore(t, true)
	var all []string
	var batch []*Message
	for i := range 1200 {
		offset := time.Duration(i/4)*time.Second + time.Duration(i%4/2)*500*time.Millisecond
		id := fmt.Sprintf("w%04d", i)
		all = append(all, id)
		batch = append(batch, newMsg(id, "#walk", at(offset), "x"))
		if len(batch) == 300 {
			mustAppend(t, s, batch...)
			batch = batch[:0]
		}
	}
	return s, all
}

// TestPageBeforeUnixWalk documents freeq's REST paging: a client passing the oldest timestamp (in
// seconds) it holds as the next "before" never sees a message twice, but loses the messages of
// each page's oldest second that did not fit on that page.
func TestPageBeforeUnixWalk(t *testing.T) {
	s, all := walkFixture(t)
	ctx := context.Background()
	seen := map[string]int{}
	var before int64
	var lost []string
	for {
		page, err := s.PageBeforeUnix(ctx, "#walk", before, 50)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for i, m := range page {
			seen[m.MsgID]++
			if i > 0 && m.Time.Before(page[i-1].Time) {
				t.Fatalf("page not oldest first: %v", ids(page))
			}
		}
		oldest := page[0].Time.Unix()
		// What the next page cannot return: the rest of the oldest second.
		hi, _ := unixUpper(oldest + 1)
		sameSecond, err := s.messages().newestIn(ctx, "#walk", keysBeforeMs(oldest*1000)-1, hi, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range sameSecond {
			if seen[m.MsgID] == 0 {
				lost = append(lost, m.MsgID)
			}
		}
		before = oldest
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("%s returned %d times", id, n)
		}
	}
	if len(seen)+len(lost) != len(all) {
		t.Fatalf("seen %d + lost %d != %d stored", len(seen), len(lost), len(all))
	}
	if len(lost) == 0 {
		t.Fatal("expected same-second losses with a seconds cursor; the fixture no longer exercises them")
	}
	t.Logf("seconds cursor: %d of %d messages returned, %d lost at page boundaries", len(seen), len(all), len(lost))
}

// TestBeforeMsgIDWalk: paging back with the oldest msgid held as the bound returns every message
// exactly once, in order.
func TestBeforeMsgIDWalk(t *testing.T) {
	s, all := walkFixture(t)
	ctx := context.Background()
	var got []string
	bound := Bound{}
	for {
		page, err := s.Before(ctx, "#walk", bound, 50)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		got = append(ids(page), got...)
		bound = Bound{MsgID: page[0].MsgID}
	}
	if len(got) != len(all) {
		t.Fatalf("walk returned %d messages, want %d", len(got), len(all))
	}
	for i := range all {
		if got[i] != all[i] {
			t.Fatalf("walk[%d] = %s, want %s", i, got[i], all[i])
		}
	}
	// And forwards with After.
	got = got[:0]
	bound = Bound{}
	for {
		page, err := s.After(ctx, "#walk", bound, 70)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		got = append(got, ids(page)...)
		bound = Bound{MsgID: page[len(page)-1].MsgID}
	}
	if len(got) != len(all) {
		t.Fatalf("forward walk returned %d messages, want %d", len(got), len(all))
	}
}
