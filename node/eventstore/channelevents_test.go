package eventstore

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

func chanEvent(venue, id string, ms int64, index uint64, cmd string, params ...string) ChannelEvent {
	return ChannelEvent{Venue: venue, MsgID: id, Time: t0.Add(time.Duration(ms) * time.Millisecond), Index: index,
		Command: cmd, Source: "alice!a@host", Account: "did:plc:alice", Params: params}
}

func eventIDs(evs []ChannelEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.MsgID
	}
	return out
}

func TestChannelEventsRanges(t *testing.T) {
	s, _ := openTestStore(t, true)
	ctx := context.Background()
	base := t0.UnixMilli()
	evs := []ChannelEvent{
		chanEvent("#a", "01A", 0, 10, "JOIN", "#a"),
		chanEvent("#a", "01B", 0, 11, "MODE", "#a", "+o", "bob"),
		chanEvent("#a", "01C", 5, 12, "TOPIC", "#a", "hello"),
		chanEvent("#a", "01D", 9, 20, "PART", "#a"),
		chanEvent("#b", "01E", 5, 13, "JOIN", "#b"),
	}
	if err := s.FileChannelEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	// Filing again (Raft re-applies entries at start) changes nothing.
	if err := s.FileChannelEvents(ctx, evs[:2]); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		newest bool
		lo, hi EventPos
		since  uint64
		limit  int
		want   []string
	}{
		{"all oldest", false, EventsFirst, EventsLast, 0, 10, []string{"01A", "01B", "01C", "01D"}},
		{"oldest two", false, EventsFirst, EventsLast, 0, 2, []string{"01A", "01B"}},
		{"newest two", true, EventsFirst, EventsLast, 0, 2, []string{"01C", "01D"}},
		{"after an event", false, EventPos{base, "01A"}, EventsLast, 0, 10, []string{"01B", "01C", "01D"}},
		{"before an event", true, EventsFirst, EventPos{base + 5, "01C"}, 0, 10, []string{"01A", "01B"}},
		{"after a millisecond", false, EventsAfter(base), EventsLast, 0, 10, []string{"01C", "01D"}},
		{"before a millisecond", true, EventsFirst, EventsBefore(base + 5), 0, 10, []string{"01A", "01B"}},
		{"from a millisecond on", false, EventsAfter(base + 4), EventsBefore(base + 9), 0, 10, []string{"01C"}},
		{"since an index", false, EventsFirst, EventsLast, 12, 10, []string{"01C", "01D"}},
		{"empty range", false, EventPos{base + 5, "01C"}, EventPos{base + 5, "01C"}, 0, 10, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []ChannelEvent
			var err error
			if tc.newest {
				got, err = s.NewestEvents(ctx, "#a", tc.lo, tc.hi, tc.since, tc.limit)
			} else {
				got, err = s.OldestEvents(ctx, "#a", tc.lo, tc.hi, tc.since, tc.limit)
			}
			if err != nil {
				t.Fatal(err)
			}
			if ids := eventIDs(got); !slices.Equal(ids, tc.want) {
				t.Fatalf("got %v, want %v", ids, tc.want)
			}
		})
	}
	got, err := s.ChannelEventByID(ctx, "#a", "01B")
	if err != nil {
		t.Fatal(err)
	}
	if got.Command != "MODE" || !slices.Equal(got.Params, []string{"#a", "+o", "bob"}) || got.Index != 11 ||
		!got.Time.Equal(t0) || got.Account != "did:plc:alice" || got.Source != "alice!a@host" {
		t.Fatalf("event read back as %+v", got)
	}
	if _, err := s.ChannelEventByID(ctx, "#b", "01B"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("event of another venue: %v, want ErrNotFound", err)
	}
	if err := s.DropChannelEvents(ctx, "#a", 12); err != nil {
		t.Fatal(err)
	}
	left, err := s.OldestEvents(ctx, "#a", EventsFirst, EventsLast, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if ids := eventIDs(left); !slices.Equal(ids, []string{"01C", "01D"}) {
		t.Fatalf("after dropping the events before index 12: %v", ids)
	}
	// Events are never messages: the message views of the venue stay empty.
	if msgs, err := s.Latest(ctx, "#a", Bound{}, 10); err != nil || len(msgs) != 0 {
		t.Fatalf("message history of #a: %v %v", ids(msgs), err)
	}
}

func TestChannelEventsInvalid(t *testing.T) {
	s, _ := openTestStore(t, true)
	ctx := context.Background()
	many := make([]string, MaxEventParams+1)
	tests := []struct {
		name string
		ev   ChannelEvent
	}{
		{"no venue", chanEvent("", "01A", 0, 1, "JOIN")},
		{"no msgid", chanEvent("#a", "", 0, 1, "JOIN")},
		{"no command", chanEvent("#a", "01A", 0, 1, "")},
		{"too many params", chanEvent("#a", "01A", 0, 1, "MODE", many...)},
		{"time out of range", ChannelEvent{Venue: "#a", MsgID: "01A", Command: "JOIN", Time: time.Date(2400, 1, 1, 0, 0, 0, 0, time.UTC)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.FileChannelEvents(ctx, []ChannelEvent{tc.ev}); !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("got %v, want ErrInvalidArgument", err)
			}
		})
	}
	if _, err := s.OldestEvents(ctx, "#a", EventsFirst, EventsLast, 0, 0); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("limit 0: %v", err)
	}
	if evs, err := s.OldestEvents(ctx, "#a", EventsFirst, EventsLast, 0, 10); err != nil || len(evs) != 0 {
		t.Fatalf("refused events were stored: %v %v", evs, err)
	}
}

// EventsThrough walks every venue's events in log order, page by page, up to an index.
func TestEventsThrough(t *testing.T) {
	s, _ := openTestStore(t, true)
	ctx := context.Background()
	evs := []ChannelEvent{
		chanEvent("#b", "01E", 5, 13, "JOIN", "#b"),
		chanEvent("#a", "01A", 0, 10, "JOIN", "#a"),
		chanEvent("#a", "01Q", 1, 13, "QUIT", "bye"), // one QUIT in two channels: one index, one msgid
		chanEvent("#b", "01Q", 1, 13, "QUIT", "bye"),
		chanEvent("#a", "01D", 9, 20, "PART", "#a"),
	}
	if err := s.FileChannelEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		after   EventKey
		through uint64
		limit   int
		want    []string
		wantErr error
	}{
		{"all", EventKey{}, 100, 10, []string{"01A", "01Q", "01E", "01Q", "01D"}, nil},
		{"through an index", EventKey{}, 13, 10, []string{"01A", "01Q", "01E", "01Q"}, nil},
		{"a page", EventKey{}, 100, 2, []string{"01A", "01Q"}, nil},
		{"after a key inside an index", EventKey{13, "#a", "01Q"}, 100, 10, []string{"01E", "01Q", "01D"}, nil},
		{"nothing through", EventKey{}, 9, 10, nil, nil},
		{"limit 0", EventKey{}, 100, 0, nil, ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.EventsThrough(ctx, tt.after, tt.through, tt.limit)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if ids := eventIDs(got); !slices.Equal(ids, tt.want) && !(len(ids) == 0 && len(tt.want) == 0) {
				t.Fatalf("got %v, want %v", ids, tt.want)
			}
		})
	}
}
