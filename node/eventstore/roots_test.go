package eventstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// appendInOneBatch makes the writer take calls as one batch, in order: it holds the writer on a
// request of its own until every call is queued behind it. It returns each call's error.
func appendInOneBatch(t *testing.T, s *Store, calls [][]*Message) []error {
	t.Helper()
	ctx := context.Background()
	held, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	s.taken = func() {
		if first.CompareAndSwap(false, true) {
			close(held)
			<-release
		}
	}
	defer func() { s.taken = nil }()
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := s.Append(ctx, newMsg(fmt.Sprintf("hold-%d", time.Now().UnixNano()), "#hold", t0, "hold")); err != nil {
			t.Errorf("holding append: %v", err)
		}
	})
	<-held
	errs := make([]error, len(calls))
	for i, call := range calls {
		wg.Go(func() { errs[i] = s.Append(ctx, call...) })
		waitUntil(t, func() bool { return len(s.reqs) == i+1 })
	}
	close(release)
	wg.Wait()
	return errs
}

// waitUntil waits (up to 10 s) until cond holds.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
		runtime.Gosched()
	}
}

// checkOrderKeys checks what the writer's own okeys must keep: every root's okey lies in its
// millisecond, and okey order is (time_ms, seq) order.
func checkOrderKeys(t *testing.T, s *Store) {
	t.Helper()
	rows, err := s.readDB.Query(`SELECT seq, okey, time_ms FROM messages WHERE replaces_msgid IS NULL ORDER BY okey`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var prevSeq, prevMs int64 = 0, minTimeMs
	for rows.Next() {
		var seq, okey, ms int64
		if err := rows.Scan(&seq, &okey, &ms); err != nil {
			t.Fatal(err)
		}
		if okey>>tieBits != ms {
			t.Errorf("seq %d: okey %d is not in its millisecond %d", seq, okey, ms)
		}
		if ms < prevMs || (ms == prevMs && seq < prevSeq) {
			t.Errorf("okey order breaks (time, seq) order at seq %d (ms %d) after seq %d (ms %d)", seq, ms, prevSeq, prevMs)
		}
		prevSeq, prevMs = seq, ms
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestRootRuns stores mixes of new roots (runs), older roots, duplicates, edits and orphan edits,
// one call at a time and as one batch, and checks the views, search, the duplicates reported and
// the order keys against what the calls' seqs say.
func TestRootRuns(t *testing.T) {
	ms := func(n int) time.Time { return at(time.Duration(n) * time.Millisecond) }
	many := func(prefix string, n, atMs int) []*Message {
		out := make([]*Message, n)
		for i := range out {
			out[i] = newMsg(fmt.Sprintf("%s%03d", prefix, i), "#c", ms(atMs+i%3), fmt.Sprintf("word%s%03d", prefix, i))
		}
		return out
	}
	cases := []struct {
		name  string
		calls func() [][]*Message
		dups  []int // indexes of the calls that must report ErrDuplicate
	}{
		{"a long run in one call (every chunk size)", func() [][]*Message {
			return [][]*Message{many("a", 300, 5)}
		}, nil},
		{"older roots between new ones", func() [][]*Message {
			return [][]*Message{
				{newMsg("n1", "#c", ms(50), "wordn1"), newMsg("n2", "#c", ms(50), "wordn2")},
				{newMsg("o1", "#c", ms(20), "wordo1"), newMsg("n3", "#c", ms(50), "wordn3"), newMsg("o2", "#c", ms(50-1), "wordo2")},
				{newMsg("n4", "#c", ms(51), "wordn4"), newMsg("o3", "#c", ms(20), "wordo3")},
			}
		}, nil},
		{"duplicates across calls and within one", func() [][]*Message {
			return [][]*Message{
				{newMsg("d1", "#c", ms(1), "wordd1")},
				{newMsg("d1", "#c", ms(2), "wordcopy"), newMsg("d2", "#c", ms(2), "wordd2")},
				{newMsg("d3", "#c", ms(3), "wordd3"), newMsg("d3", "#c", ms(3), "wordcopy")},
				{newMsg("d4", "#c", ms(0), "wordd4"), newMsg("d2", "#c", ms(4), "wordcopy")},
			}
		}, []int{1, 2, 3}},
		{"roots a few milliseconds behind the newest, over more milliseconds than are kept", func() [][]*Message {
			// As a node receives another's stream: each root up to 5 ms behind the newest, in
			// calls of 100 spanning 6,000 ms (the recent milliseconds are trimmed on the way),
			// then roots older than every recent millisecond and in trimmed ones.
			var calls [][]*Message
			for c := range 60 {
				call := make([]*Message, 100)
				for i := range call {
					n := c*100 + i
					call[i] = newMsg(fmt.Sprintf("j%04d", n), "#c", ms(n-(n*7919)%6), fmt.Sprintf("wordj%04d", n))
				}
				calls = append(calls, call)
			}
			return append(calls, []*Message{newMsg("old1", "#c", ms(3), "wordold1"), newMsg("new1", "#c", ms(5999), "wordnew1"),
				newMsg("old2", "#c", ms(3000), "wordold2"), newMsg("old3", "#c", ms(-1), "wordold3")})
		}, nil},
		{"edits of roots in the same run, and an orphan edit before its root", func() [][]*Message {
			r1 := newMsg("e-r1", "#c", ms(5), "wordoriginal")
			root := newMsg("root", "#c", ms(10), "wordroot")
			return [][]*Message{
				{r1, newEdit("e-e1", "e-r1", r1, ms(6), "wordedited")},
				{newEdit("e-early", "root", root, ms(12), "wordearly"), newMsg("e-r2", "#c", ms(7), "wordr2")},
				{root, newMsg("e-r3", "#c", ms(11), "wordr3")},
			}
		}, nil},
	}
	for _, tc := range cases {
		for _, batched := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/batched=%v", tc.name, batched), func(t *testing.T) {
				s, _ := openTestStore(t, true)
				ctx := context.Background()
				calls := tc.calls()
				var errs []error
				if batched {
					errs = appendInOneBatch(t, s, calls)
				} else {
					for _, call := range calls {
						errs = append(errs, s.Append(ctx, call...))
					}
				}
				for i, err := range errs {
					if slices.Contains(tc.dups, i) != errors.Is(err, ErrDuplicate) || (err != nil && !errors.Is(err, ErrDuplicate)) {
						t.Errorf("call %d: err = %v", i, err)
					}
				}
				checkRootRunOutcome(t, s, calls)
				checkOrderKeys(t, s)
			})
		}
	}
}

// checkRootRunOutcome compares the #c views and search with what the calls' seqs imply: the live
// roots in (time, seq) order, each in its newest revision.
func checkRootRunOutcome(t *testing.T, s *Store, calls [][]*Message) {
	t.Helper()
	ctx := context.Background()
	type root struct {
		m    *Message
		text string
		rev  *Message
	}
	roots := map[string]*root{}
	var edits []*Message
	for _, call := range calls {
		for _, m := range call {
			switch {
			case m.Seq == 0:
			case m.ReplacesMsgID == "":
				roots[m.MsgID] = &root{m: m, text: m.Text}
			default:
				edits = append(edits, m)
			}
		}
	}
	for _, e := range edits {
		r := roots[e.ReplacesMsgID]
		if r == nil {
			continue
		}
		if r.rev == nil || e.Time.After(r.rev.Time) || (e.Time.Equal(r.rev.Time) && e.Seq > r.rev.Seq) {
			r.rev, r.text = e, e.Text
		}
	}
	want := make([]*root, 0, len(roots))
	for _, r := range roots {
		want = append(want, r)
	}
	slices.SortFunc(want, func(a, b *root) int {
		if c := a.m.Time.Compare(b.m.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.m.Seq, b.m.Seq)
	})
	got, err := s.Latest(ctx, "#c", Bound{}, MaxLimit)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("Latest holds %d roots, want %d", len(got), len(want))
	}
	for i, r := range want {
		if got[i].MsgID != r.m.MsgID || got[i].Seq != r.m.Seq || got[i].Text != r.text {
			t.Fatalf("Latest[%d] = %s seq %d %q, want %s seq %d %q", i, got[i].MsgID, got[i].Seq, got[i].Text, r.m.MsgID, r.m.Seq, r.text)
		}
		found, err := s.Search(ctx, "#c", r.text, 0, 5)
		if err != nil || len(found) != 1 || found[0].MsgID != r.m.MsgID {
			t.Fatalf("Search %q = %v, %v; want %s alone", r.text, ids(found), err, r.m.MsgID)
		}
	}
}

// TestRootRunsAfterReopen: the newest order key is read back at Open, so a root stored after a
// restart in the newest stored millisecond is placed after the roots stored there before.
func TestRootRunsAfterReopen(t *testing.T) {
	ctx := context.Background()
	s, path := openTestStore(t, true)
	first := []*Message{newMsg("x1", "#c", t0, "one"), newMsg("x2", "#c", t0, "two")}
	mustAppend(t, s, first...)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, Options{Path: path, NoSync: true, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustAppend(t, s, newMsg("x3", "#c", t0, "three"), newMsg("x4", "#c", at(-time.Millisecond), "four"))
	got, err := s.Latest(ctx, "#c", Bound{}, 10)
	wantIDs(t, got, err, []string{"x4", "x1", "x2", "x3"}, nil)
	checkOrderKeys(t, s)
}
