package eventstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSearchPlansAgree checks that Search answers exactly what a brute-force filter of the stored
// messages answers, in a venue that holds most messages (answered by the walk), in one that holds
// few (the walk's budget runs out and the intersection goes on from where it stopped), and in one
// that is remembered as sparse (intersection only, with a walk again every sparseRetry searches).
func TestSearchPlansAgree(t *testing.T) {
	s, _ := openTestStore(t, true)
	ctx := context.Background()
	type stored struct {
		id, venue, text string
		unix            int64
	}
	var all []stored
	var msgs []*Message
	for i := range 400 {
		venue := "#dense"
		switch {
		case i%25 == 0:
			venue = "#sparse"
		case i%4 == 0:
			venue = "#medium"
		}
		text := fmt.Sprintf("common k%d j%d", i%3, i%7)
		id := fmt.Sprintf("m%04d", i)
		when := at(time.Duration(i) * 700 * time.Millisecond)
		all = append(all, stored{id: id, venue: venue, text: text, unix: when.Unix()})
		msgs = append(msgs, newMsg(id, venue, when, text))
	}
	mustAppend(t, s, msgs...)
	want := func(venue, query string, beforeUnix int64, limit int) []string {
		var out []string
		for _, m := range slices.Backward(all) {
			words := strings.Fields(m.text)
			if m.venue != venue || (beforeUnix > 0 && m.unix >= beforeUnix) {
				continue
			}
			holdsAll := true
			for _, term := range strings.Fields(query) {
				holdsAll = holdsAll && slices.Contains(words, term)
			}
			if holdsAll && len(out) < limit {
				out = append(out, m.id)
			}
		}
		return out
	}
	mid := all[len(all)/2].unix
	for _, venue := range []string{"#dense", "#medium", "#sparse", "#none"} {
		for _, query := range []string{"common", "k1", "k2 j5", "absent"} {
			for _, beforeUnix := range []int64{0, mid} {
				for _, limit := range []int{1, 7, 25, 200} {
					name := fmt.Sprintf("%s/%s/before=%d/limit=%d", venue, query, beforeUnix, limit)
					t.Run(name, func(t *testing.T) {
						expect := want(venue, query, beforeUnix, limit)
						for i := range sparseRetry + 2 { // walk, remembered plan, walk again
							got, err := s.Search(ctx, venue, query, beforeUnix, limit)
							if err != nil || !slices.Equal(ids(got), expect) {
								t.Fatalf("search %d: got %v, %v; want %v", i, ids(got), err, expect)
							}
						}
					})
				}
			}
		}
	}
}

func TestSparseVenues(t *testing.T) {
	var sv sparseVenues
	if !sv.tryWalk("#a") {
		t.Fatal("an unknown venue should be walked")
	}
	sv.record("#a", true)
	walks := 0
	for range 2 * sparseRetry {
		if sv.tryWalk("#a") {
			walks++
		}
	}
	if walks != 2 {
		t.Fatalf("a sparse venue was walked %d times in %d searches, want 2", walks, 2*sparseRetry)
	}
	sv.record("#a", false)
	if !sv.tryWalk("#a") {
		t.Fatal("a venue whose walk filled its page should be walked")
	}
	for i := range maxSparseVenues + 1 {
		sv.record(fmt.Sprintf("#v%d", i), true)
	}
	if len(sv.skips) > maxSparseVenues {
		t.Fatalf("%d sparse venues kept, want at most %d", len(sv.skips), maxSparseVenues)
	}
}
