package eventstore

import (
	"context"
	"slices"
	"testing"
	"time"
)

// viewFixture stores, in this order: m01..m06 in #c (m02, m03 and m04 in the same millisecond),
// x01 in #other, m07 and m08, two edits of m06 (e2 names e1, so it is re-pointed at m06), m00 (a
// late arrival older than everything), and deletes m07.
//
// Live #c in (time, seq) order: m00 m01 m02 m03 m04 m05 m06 m08; by seq: m01..m06 m08 m00.
func viewFixture(t *testing.T) *Store {
	t.Helper()
	s, _ := openTestStore(t, true)
	m06 := newMsg("m06", "#c", at(3*time.Second), "six")
	mustAppend(t, s,
		newMsg("m01", "#c", at(0), "one"),
		newMsg("m02", "#c", at(time.Second), "two"),
		newMsg("m03", "#c", at(time.Second), "three"),
		newMsg("m04", "#c", at(time.Second), "four"),
		newMsg("m05", "#c", at(2*time.Second), "five"),
		m06,
		newMsg("x01", "#other", at(2500*time.Millisecond), "elsewhere"),
		newMsg("m07", "#c", at(4*time.Second), "seven"),
		newMsg("m08", "#c", at(5*time.Second), "eight"),
	)
	mustAppend(t, s, newEdit("e1", "m06", m06, at(10*time.Second), "six v2"))
	mustAppend(t, s, newEdit("e2", "e1", m06, at(11*time.Second), "six v3"))
	mustAppend(t, s, newMsg("m00", "#c", at(-time.Second), "zero"))
	if err := s.Delete(context.Background(), "m07", at(20*time.Second)); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	return s
}

func TestViews(t *testing.T) {
	s := viewFixture(t)
	ctx := context.Background()
	id := func(msgid string) Bound { return Bound{MsgID: msgid} }
	tm := func(d time.Duration) Bound { return Bound{Time: at(d)} }
	sec := time.Second
	tests := []struct {
		name    string
		call    func() ([]Message, error)
		want    []string
		wantErr error
	}{
		{"before open", func() ([]Message, error) { return s.Before(ctx, "#c", Bound{}, 3) }, []string{"m05", "m06", "m08"}, nil},
		{"before open all", func() ([]Message, error) { return s.Before(ctx, "#c", Bound{}, 100) },
			[]string{"m00", "m01", "m02", "m03", "m04", "m05", "m06", "m08"}, nil},
		{"before msgid inside a tie", func() ([]Message, error) { return s.Before(ctx, "#c", id("m04"), 2) }, []string{"m02", "m03"}, nil},
		{"before msgid short page", func() ([]Message, error) { return s.Before(ctx, "#c", id("m03"), 5) }, []string{"m00", "m01", "m02"}, nil},
		{"before time excludes its millisecond", func() ([]Message, error) { return s.Before(ctx, "#c", tm(sec), 10) }, []string{"m00", "m01"}, nil},
		{"before an edit's msgid is before its root", func() ([]Message, error) { return s.Before(ctx, "#c", id("e1"), 2) }, []string{"m04", "m05"}, nil},
		{"before a deleted root", func() ([]Message, error) { return s.Before(ctx, "#c", id("m07"), 1) }, []string{"m06"}, nil},
		{"before the oldest", func() ([]Message, error) { return s.Before(ctx, "#c", id("m00"), 5) }, nil, nil},
		{"before unknown msgid", func() ([]Message, error) { return s.Before(ctx, "#c", id("nope"), 5) }, nil, ErrNotFound},
		{"before msgid of another venue", func() ([]Message, error) { return s.Before(ctx, "#c", id("x01"), 5) }, nil, ErrNotFound},
		{"before limit 0", func() ([]Message, error) { return s.Before(ctx, "#c", Bound{}, 0) }, nil, ErrInvalidArgument},
		{"before empty venue", func() ([]Message, error) { return s.Before(ctx, "#empty", Bound{}, 10) }, nil, nil},

		{"after open", func() ([]Message, error) { return s.After(ctx, "#c", Bound{}, 2) }, []string{"m00", "m01"}, nil},
		{"after msgid inside a tie", func() ([]Message, error) { return s.After(ctx, "#c", id("m02"), 2) }, []string{"m03", "m04"}, nil},
		{"after time excludes its millisecond", func() ([]Message, error) { return s.After(ctx, "#c", tm(sec), 10) }, []string{"m05", "m06", "m08"}, nil},
		{"after time", func() ([]Message, error) { return s.After(ctx, "#c", tm(0), 1) }, []string{"m02"}, nil},
		{"after the newest", func() ([]Message, error) { return s.After(ctx, "#c", id("m08"), 1) }, nil, nil},
		{"after limit -1", func() ([]Message, error) { return s.After(ctx, "#c", Bound{}, -1) }, nil, ErrInvalidArgument},

		{"latest", func() ([]Message, error) { return s.Latest(ctx, "#c", Bound{}, 2) }, []string{"m06", "m08"}, nil},
		{"latest after msgid", func() ([]Message, error) { return s.Latest(ctx, "#c", id("m05"), 10) }, []string{"m06", "m08"}, nil},
		{"latest after old msgid", func() ([]Message, error) { return s.Latest(ctx, "#c", id("m01"), 2) }, []string{"m06", "m08"}, nil},
		{"latest after time", func() ([]Message, error) { return s.Latest(ctx, "#c", tm(sec), 10) }, []string{"m05", "m06", "m08"}, nil},

		{"between ascending", func() ([]Message, error) { return s.Between(ctx, "#c", id("m01"), id("m08"), 10) },
			[]string{"m02", "m03", "m04", "m05", "m06"}, nil},
		{"between ascending starts at a", func() ([]Message, error) { return s.Between(ctx, "#c", id("m01"), id("m08"), 2) }, []string{"m02", "m03"}, nil},
		{"between descending starts at a", func() ([]Message, error) { return s.Between(ctx, "#c", id("m08"), id("m01"), 2) }, []string{"m05", "m06"}, nil},
		{"between times", func() ([]Message, error) { return s.Between(ctx, "#c", tm(sec), tm(3*sec), 10) }, []string{"m05"}, nil},
		{"between times reversed", func() ([]Message, error) { return s.Between(ctx, "#c", tm(3*sec), tm(sec), 10) }, []string{"m05"}, nil},
		{"between tie neighbours", func() ([]Message, error) { return s.Between(ctx, "#c", id("m02"), id("m04"), 10) }, []string{"m03"}, nil},
		{"between msgid and time", func() ([]Message, error) { return s.Between(ctx, "#c", id("m03"), tm(3*sec), 10) }, []string{"m04", "m05"}, nil},
		{"between same", func() ([]Message, error) { return s.Between(ctx, "#c", id("m03"), id("m03"), 10) }, nil, nil},
		{"between open bound", func() ([]Message, error) { return s.Between(ctx, "#c", Bound{}, id("m03"), 10) }, nil, ErrInvalidArgument},

		{"around msgid odd", func() ([]Message, error) { return s.Around(ctx, "#c", id("m04"), 3) }, []string{"m03", "m04", "m05"}, nil},
		{"around msgid even", func() ([]Message, error) { return s.Around(ctx, "#c", id("m04"), 4) }, []string{"m03", "m04", "m05", "m06"}, nil},
		{"around the oldest fills after", func() ([]Message, error) { return s.Around(ctx, "#c", id("m00"), 3) }, []string{"m00", "m01", "m02"}, nil},
		{"around the newest fills before", func() ([]Message, error) { return s.Around(ctx, "#c", id("m08"), 3) }, []string{"m05", "m06", "m08"}, nil},
		{"around time", func() ([]Message, error) { return s.Around(ctx, "#c", tm(sec), 2) }, []string{"m01", "m02"}, nil},
		{"around a deleted root excludes it", func() ([]Message, error) { return s.Around(ctx, "#c", id("m07"), 2) }, []string{"m06", "m08"}, nil},
		{"around an edit's msgid is its root", func() ([]Message, error) { return s.Around(ctx, "#c", id("e2"), 1) }, []string{"m06"}, nil},
		{"around more than stored", func() ([]Message, error) { return s.Around(ctx, "#c", id("m04"), 100) },
			[]string{"m00", "m01", "m02", "m03", "m04", "m05", "m06", "m08"}, nil},
		{"around without center", func() ([]Message, error) { return s.Around(ctx, "#c", Bound{}, 3) }, nil, ErrInvalidArgument},

		{"page newest", func() ([]Message, error) { return s.PageBeforeUnix(ctx, "#c", 0, 2) }, []string{"m06", "m08"}, nil},
		{"page before second", func() ([]Message, error) { return s.PageBeforeUnix(ctx, "#c", at(2*sec).Unix(), 10) },
			[]string{"m00", "m01", "m02", "m03", "m04"}, nil},
		{"page negative", func() ([]Message, error) { return s.PageBeforeUnix(ctx, "#c", -5, 10) }, nil, ErrInvalidArgument},

		{"export by seq", func() ([]Message, error) { return s.ExportAfter(ctx, "#c", 0, 100) },
			[]string{"m01", "m02", "m03", "m04", "m05", "m06", "m08", "m00"}, nil},
		{"export other venue", func() ([]Message, error) { return s.ExportAfter(ctx, "#other", 0, 100) }, []string{"x01"}, nil},
		{"export limit 0", func() ([]Message, error) { return s.ExportAfter(ctx, "#c", 0, 0) }, nil, ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.call()
			wantIDs(t, got, err, tt.want, tt.wantErr)
			for _, m := range got {
				if m.MsgID == "m06" && (m.Text != "six v3" || m.Revision != "e2" || !m.Time.Equal(at(3*time.Second))) {
					t.Errorf("m06 in view = text %q revision %q time %v; want current form", m.Text, m.Revision, m.Time)
				}
				if m.ReplacesMsgID != "" || !m.DeletedAt.IsZero() {
					t.Errorf("%s: view returned an edit or deleted row: %+v", m.MsgID, m)
				}
			}
		})
	}
}

func TestExportWalkContinues(t *testing.T) {
	s := viewFixture(t)
	got := exportAll(t, s, "#c", 3)
	if want := []string{"m01", "m02", "m03", "m04", "m05", "m06", "m08", "m00"}; !slices.Equal(got, want) {
		t.Fatalf("export walk = %v, want %v", got, want)
	}
}

// exportAll walks a venue's export page by page (pages of size) and returns the msgids in the order
// the pages gave them.
func exportAll(t *testing.T, s *Store, venue string, size int) []string {
	t.Helper()
	var got []string
	var after int64
	for {
		page, err := s.ExportAfter(context.Background(), venue, after, size)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			return got
		}
		got = append(got, ids(page)...)
		after = page[len(page)-1].Seq
	}
}

func TestSplitAround(t *testing.T) {
	tests := []struct{ room, before, after, wantB, wantA int }{
		{5, 10, 10, 2, 3},
		{4, 10, 10, 2, 2},
		{5, 1, 10, 1, 4},
		{5, 10, 1, 4, 1},
		{5, 1, 1, 1, 1},
		{0, 3, 3, 0, 0},
		{1, 3, 3, 0, 1},
		{1, 3, 0, 1, 0},
	}
	for _, tt := range tests {
		b, a := splitAround(tt.room, tt.before, tt.after)
		if b != tt.wantB || a != tt.wantA {
			t.Errorf("splitAround(%d, %d, %d) = %d, %d; want %d, %d", tt.room, tt.before, tt.after, b, a, tt.wantB, tt.wantA)
		}
	}
}

func TestClampLimit(t *testing.T) {
	tests := []struct {
		in, want int
		wantErr  bool
	}{{1, 1, false}, {50, 50, false}, {MaxLimit, MaxLimit, false}, {MaxLimit + 1, MaxLimit, false}, {0, 0, true}, {-3, 0, true}}
	for _, tt := range tests {
		got, err := clampLimit(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("clampLimit(%d) = %d, %v", tt.in, got, err)
		}
	}
}
