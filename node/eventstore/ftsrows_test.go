package eventstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBulkStatementsAtChunkEdges: one Append call of n messages is one transaction, so its search
// rows go in with the padded multi-row index inserts (ftsrows.go) and the intake asks for its
// msgids with the padded lookups (admit.go). Around every edge of those statements (one row, a
// power of two, one past it, past the largest statement), every message is found by search, and a
// repeat of stored msgids anywhere in the call is reported as a duplicate and the rest stored.
func TestBulkStatementsAtChunkEdges(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{1, 2, 3, 5, 64, 65, maxFTSChunk - 1, maxFTSChunk, maxFTSChunk + 1, 2*maxFTSChunk + 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s, _ := openTestStore(t, true)
			venue := "#bulk"
			msgs := make([]*Message, n)
			for i := range msgs {
				msgs[i] = newMsg(fmt.Sprintf("m%05d", i), venue, at(time.Duration(i)*time.Millisecond), fmt.Sprintf("common word%d", i))
			}
			mustAppend(t, s, msgs...)

			got, err := s.Search(ctx, venue, "common", 0, MaxLimit)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != n {
				t.Fatalf("search for the common word: %d messages, want %d", len(got), n)
			}
			for _, i := range []int{0, n / 2, n - 1} {
				hit, err := s.Search(ctx, venue, fmt.Sprintf("word%d", i), 0, 10)
				if err != nil {
					t.Fatal(err)
				}
				if len(hit) != 1 || hit[0].MsgID != msgs[i].MsgID {
					t.Errorf("search for word%d: %v, want [%s]", i, ids(hit), msgs[i].MsgID)
				}
			}

			// The stored msgids again, spread through a call of new ones: each stored one is a
			// duplicate, every new one is stored.
			var again []*Message
			var wantDups []string
			for i := range n + 2 {
				if i%2 == 0 && i/2 < n {
					again = append(again, newMsg(msgs[i/2].MsgID, venue, at(time.Hour), "repeat"))
					wantDups = append(wantDups, msgs[i/2].MsgID)
					continue
				}
				again = append(again, newMsg(fmt.Sprintf("n%05d", i), venue, at(time.Hour+time.Duration(i)*time.Millisecond), "fresh"))
			}
			err = s.Append(ctx, again...)
			if !errors.Is(err, ErrDuplicate) {
				t.Fatalf("Append with %d stored msgids: %v, want ErrDuplicate", len(wantDups), err)
			}
			for _, id := range wantDups {
				if !strings.Contains(err.Error(), id) {
					t.Errorf("duplicate %s not named in %v", id, err)
					break
				}
			}
			fresh, err := s.Search(ctx, venue, "fresh", 0, MaxLimit)
			if err != nil {
				t.Fatal(err)
			}
			if want := len(again) - len(wantDups); len(fresh) != want {
				t.Errorf("new messages of the call stored: %d, want %d", len(fresh), want)
			}
			if slices.ContainsFunc(fresh, func(m Message) bool { return m.Text == "repeat" }) {
				t.Error("a duplicate was stored")
			}
		})
	}
}
