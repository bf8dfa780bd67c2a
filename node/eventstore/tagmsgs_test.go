package eventstore

import (
	"context"
	"testing"
	"time"
)

// newTagmsg is a kept TAGMSG: no text, its client tags.
func newTagmsg(id, venue string, when time.Time) *Message {
	m := newMsg(id, venue, when, "")
	m.Command = "TAGMSG"
	m.Tags = map[string]string{"+draft/persist": "", "+client-only-tag-test": "success"}
	return m
}

// TestKeptTagmsgViews: the message views leave kept TAGMSGs out, Playback's include them, and a
// limit counts them as it counts messages.
func TestKeptTagmsgViews(t *testing.T) {
	s, _ := openTestStore(t, true)
	ctx := context.Background()
	const v = "#tags"
	mustAppend(t, s,
		newMsg("m1", v, at(1*time.Second), "one hello"),
		newTagmsg("t1", v, at(2*time.Second)),
		newMsg("m2", v, at(3*time.Second), "two hello"),
		newTagmsg("t2", v, at(4*time.Second)),
		newMsg("m3", v, at(5*time.Second), "three hello"),
	)
	p := s.Playback()
	type call func() ([]Message, error)
	cases := []struct {
		name      string
		msgs, all call
		wantMsgs  []string
		wantAll   []string
	}{
		{"latest", func() ([]Message, error) { return s.Latest(ctx, v, Bound{}, 10) },
			func() ([]Message, error) { return p.Latest(ctx, v, Bound{}, 10) },
			[]string{"m1", "m2", "m3"}, []string{"m1", "t1", "m2", "t2", "m3"}},
		{"latest limit counts events", func() ([]Message, error) { return s.Latest(ctx, v, Bound{}, 2) },
			func() ([]Message, error) { return p.Latest(ctx, v, Bound{}, 2) },
			[]string{"m2", "m3"}, []string{"t2", "m3"}},
		{"before", func() ([]Message, error) { return s.Before(ctx, v, Bound{MsgID: "m3"}, 2) },
			func() ([]Message, error) { return p.Before(ctx, v, Bound{MsgID: "m3"}, 2) },
			[]string{"m1", "m2"}, []string{"m2", "t2"}},
		{"after a tagmsg", func() ([]Message, error) { return s.After(ctx, v, Bound{MsgID: "t1"}, 10) },
			func() ([]Message, error) { return p.After(ctx, v, Bound{MsgID: "t1"}, 10) },
			[]string{"m2", "m3"}, []string{"m2", "t2", "m3"}},
		{"between", func() ([]Message, error) { return s.Between(ctx, v, Bound{MsgID: "m1"}, Bound{MsgID: "m3"}, 10) },
			func() ([]Message, error) { return p.Between(ctx, v, Bound{MsgID: "m1"}, Bound{MsgID: "m3"}, 10) },
			[]string{"m2"}, []string{"t1", "m2", "t2"}},
		{"around a tagmsg", func() ([]Message, error) { return s.Around(ctx, v, Bound{MsgID: "t2"}, 3) },
			func() ([]Message, error) { return p.Around(ctx, v, Bound{MsgID: "t2"}, 3) },
			[]string{"m1", "m2", "m3"}, []string{"m2", "t2", "m3"}},
		{"resume after", func() ([]Message, error) { return s.ResumeAfter(ctx, v, "m1", 10) },
			func() ([]Message, error) { return p.ResumeAfter(ctx, v, "m1", 10) },
			[]string{"m2", "m3"}, []string{"t1", "m2", "t2", "m3"}},
		{"export", func() ([]Message, error) { return s.ExportAfter(ctx, v, 0, 10) },
			func() ([]Message, error) { return p.ExportAfter(ctx, v, 0, 10) },
			[]string{"m1", "m2", "m3"}, []string{"m1", "t1", "m2", "t2", "m3"}},
		{"unix page", func() ([]Message, error) { return s.PageBeforeUnix(ctx, v, 0, 10) },
			nil, []string{"m1", "m2", "m3"}, nil},
		{"search", func() ([]Message, error) { return s.Search(ctx, v, "hello", 0, 10) },
			nil, []string{"m3", "m2", "m1"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.msgs()
			wantIDs(t, got, err, tc.wantMsgs, nil)
			if tc.all != nil {
				got, err = tc.all()
				wantIDs(t, got, err, tc.wantAll, nil)
			}
		})
	}
	// The raw reads and the exchange's log return them.
	if m, err := s.Get(ctx, "t1"); err != nil || m.Command != "TAGMSG" || m.Tags["+client-only-tag-test"] != "success" {
		t.Fatalf("Get(t1) = %+v, %v", m, err)
	}
	rows, err := s.OriginAfter(ctx, "node-a", 0, 10)
	wantIDs(t, rows, err, []string{"m1", "t1", "m2", "t2", "m3"}, nil)
}
