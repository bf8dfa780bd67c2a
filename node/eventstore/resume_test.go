package eventstore

import (
	"context"
	"testing"
	"time"
)

// ResumeAfter starts at a message's ResumeFrom: the rows stored before it from there come first
// (taking at most limit-1 places), then the rows stored after it; a row without ResumeFrom
// resumes right after itself, an edit's msgid from its root.
func TestResumeAfter(t *testing.T) {
	s, _ := openTestStore(t, true)
	ctx := context.Background()
	sec := time.Second
	// Seqs 1..7 in #c (x1 in #other between them). r3 was stored before l4 but not yet
	// delivered when l4 was stored (l4 resumes from r3's seq); l6 from r5's.
	r1, r2, r3 := newMsg("r1", "#c", at(sec), "1"), newMsg("r2", "#c", at(2*sec), "2"), newMsg("r3", "#c", at(0), "3")
	x1 := newMsg("x1", "#other", at(sec), "x")
	mustAppend(t, s, r1, r2, x1, r3)
	l4 := newMsg("l4", "#c", at(4*sec), "4")
	l4.ResumeFrom = r3.Seq
	mustAppend(t, s, l4)
	r5 := newMsg("r5", "#c", at(3*sec), "5")
	mustAppend(t, s, r5)
	l6 := newMsg("l6", "#c", at(6*sec), "6")
	l6.ResumeFrom = r2.Seq
	mustAppend(t, s, l6)
	e7 := newEdit("e7", "l4", l4, at(7*sec), "4 edited")
	mustAppend(t, s, e7)
	del := newMsg("d8", "#c", at(8*sec), "8")
	mustAppend(t, s, del)
	if err := s.Delete(ctx, "d8", at(9*sec)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		msgid   string
		venue   string
		limit   int
		want    []string
		wantErr error
	}{
		{"no ResumeFrom: right after itself", "r1", "#c", 10, []string{"r2", "r3", "l4", "r5", "l6"}, nil},
		{"a message delivered later comes first", "l4", "#c", 10, []string{"r3", "r5", "l6"}, nil},
		{"several earlier ones, itself left out", "l6", "#c", 10, []string{"r2", "r3", "l4", "r5"}, nil},
		{"earlier ones take at most limit-1 places", "l6", "#c", 2, []string{"r2"}, nil},
		{"limit 1 reaches past the cursor", "l6", "#c", 1, nil, nil},
		{"an edit resumes from its root", "e7", "#c", 10, []string{"r3", "r5", "l6"}, nil},
		{"the newest", "r5", "#c", 10, []string{"l6"}, nil},
		{"another venue's message", "x1", "#c", 10, nil, ErrNotFound},
		{"unknown", "nope", "#c", 10, nil, ErrNotFound},
		{"limit 0", "l4", "#c", 0, nil, ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ResumeAfter(ctx, tt.venue, tt.msgid, tt.limit)
			wantIDs(t, got, err, tt.want, tt.wantErr)
		})
	}
	// A reader that pages from the last message of each full page reaches the end, and stops.
	seen := map[string]bool{}
	cursor := "r1"
	for pages := 0; ; pages++ {
		if pages == 10 {
			t.Fatalf("paging by the last msgid read never ends: %v", seen)
		}
		page, err := s.ResumeAfter(ctx, "#c", cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page {
			seen[m.MsgID] = true
		}
		if len(page) < 2 {
			break
		}
		cursor = page[len(page)-1].MsgID
	}
	for _, id := range []string{"r2", "r3", "l4", "r5", "l6"} {
		if !seen[id] {
			t.Errorf("paging from r1 never read %s", id)
		}
	}
	if max, err := s.MaxSeq(ctx); err != nil || max != del.Seq {
		t.Fatalf("MaxSeq = %d, %v; want %d", max, err, del.Seq)
	}
}
