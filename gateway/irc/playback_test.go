package irc

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/raft/fsm"
)

func TestPlaybackRows(t *testing.T) {
	alice := fsm.SessionRef{ID: "s1", Nick: "alice", User: "u", Host: "h", DID: "did:plc:alice", Realname: "Alice A"}
	guest := fsm.SessionRef{ID: "s2", Nick: "bob", User: "u", Host: "g"}
	base := fsm.Event{Index: 77, Time: 1_700_000_000_123, Actor: alice, Channel: "#c"}
	ev := func(mut func(e *fsm.Event)) *fsm.Event {
		e := base
		mut(&e)
		return &e
	}
	tests := []struct {
		name string
		ev   *fsm.Event
		want []string // "venue source account COMMAND params"
	}{
		{"join", ev(func(e *fsm.Event) { e.Kind = fsm.EvJoin; e.Created = true; e.Member.Op = true }),
			[]string{"#c alice!u@h did:plc:alice JOIN #c|did:plc:alice|Alice A"}},
		{"guest join", ev(func(e *fsm.Event) { e.Kind = fsm.EvJoin; e.Actor = guest }),
			[]string{"#c bob!u@g  JOIN #c|*|"}},
		{"join with prefixes", ev(func(e *fsm.Event) { e.Kind = fsm.EvJoin; e.Member.Op, e.Member.Voice = true, true }),
			[]string{"#c alice!u@h did:plc:alice JOIN #c|did:plc:alice|Alice A", "#c irc.test  MODE #c|+ov|alice|alice"}},
		{"part", ev(func(e *fsm.Event) { e.Kind = fsm.EvPart }), []string{"#c alice!u@h did:plc:alice PART #c"}},
		{"part with reason", ev(func(e *fsm.Event) { e.Kind = fsm.EvPart; e.Text = "bye" }),
			[]string{"#c alice!u@h did:plc:alice PART #c|bye"}},
		{"kick", ev(func(e *fsm.Event) { e.Kind = fsm.EvKick; e.Target = guest; e.Text = "out" }),
			[]string{"#c alice!u@h did:plc:alice KICK #c|bob|out"}},
		{"topic", ev(func(e *fsm.Event) { e.Kind = fsm.EvTopic; e.Text = "a topic" }),
			[]string{"#c alice!u@h did:plc:alice TOPIC #c|a topic"}},
		{"mode", ev(func(e *fsm.Event) {
			e.Kind = fsm.EvMode
			e.Modes = []fsm.ModeChange{{Mode: "o", Add: true, Arg: "bob"}, {Mode: "k", Add: false, Arg: "pw"}}
		}), []string{"#c alice!u@h did:plc:alice MODE #c|+o-k|bob|*"}},
		{"user mode", ev(func(e *fsm.Event) {
			e.Kind = fsm.EvMode
			e.Channel = ""
			e.Modes = []fsm.ModeChange{{Mode: "B", Add: true}}
		}), nil},
		{"quit", ev(func(e *fsm.Event) {
			e.Kind = fsm.EvQuit
			e.Channel = ""
			e.Channels = []string{"#a", "#b"}
			e.Text = "Quit: x"
		}),
			[]string{"#a alice!u@h did:plc:alice QUIT Quit: x", "#b alice!u@h did:plc:alice QUIT Quit: x"}},
		{"nick", ev(func(e *fsm.Event) { e.Kind = fsm.EvNick; e.Channel = ""; e.Channels = []string{"#a"}; e.OldNick = "al" }),
			[]string{"#a al!u@h did:plc:alice NICK alice"}},
		{"rename", ev(func(e *fsm.Event) { e.Kind = fsm.EvRename; e.OldChannel = "#old"; e.Text = "moved" }),
			[]string{"#old alice!u@h did:plc:alice RENAME #old|#c|moved", "#c alice!u@h did:plc:alice RENAME #old|#c|moved"}},
		{"away is no channel line", ev(func(e *fsm.Event) { e.Kind = fsm.EvAway; e.Channels = []string{"#a"} }), nil},
		{"invite is no channel line", ev(func(e *fsm.Event) { e.Kind = fsm.EvInvite; e.Target = guest }), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rows := playbackRows(tc.ev, 3, "irc.test")
			var got []string
			ids := map[string]bool{}
			for _, r := range rows {
				got = append(got, r.Venue+" "+r.Source+" "+r.Account+" "+r.Command+" "+strings.Join(r.Params, "|"))
				if r.Index != 77 || !r.Time.Equal(time.UnixMilli(1_700_000_000_123)) {
					t.Errorf("row %s: index %d time %v, want the entry's", r.MsgID, r.Index, r.Time)
				}
				ids[r.Venue+" "+r.MsgID] = true
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("rows\n got %q\nwant %q", got, tc.want)
			}
			if len(ids) != len(rows) {
				t.Fatalf("two rows of one venue share a msgid: %v", ids)
			}
		})
	}
}

// TestPlaybackID: the msgid of an event line is a ULID of the proposer's time, the same for the
// same entry and position on every node, distinct across positions and entries, and ordered as
// the log within a millisecond.
func TestPlaybackID(t *testing.T) {
	e := &fsm.Event{Index: 1 << 40, Time: 1_700_000_000_123}
	id := playbackID(e, 0, 0)
	parsed, err := ulid.ParseStrict(id)
	if err != nil {
		t.Fatalf("%s is no ULID: %v", id, err)
	}
	if int64(parsed.Time()) != e.Time {
		t.Fatalf("ULID time %d, want %d", parsed.Time(), e.Time)
	}
	if again := playbackID(&fsm.Event{Index: 1 << 40, Time: 1_700_000_000_123}, 0, 0); again != id {
		t.Fatalf("not deterministic: %s then %s", id, again)
	}
	order := []string{
		playbackID(&fsm.Event{Index: 9, Time: e.Time}, 0, 0),
		playbackID(&fsm.Event{Index: 9, Time: e.Time}, 0, 1),
		playbackID(&fsm.Event{Index: 9, Time: e.Time}, 1, 0),
		playbackID(&fsm.Event{Index: 10, Time: e.Time}, 0, 0),
		playbackID(&fsm.Event{Index: 10, Time: e.Time}, 70000, 0),
		playbackID(&fsm.Event{Index: 2, Time: e.Time + 1}, 0, 0),
	}
	if !slices.IsSorted(order) || len(slices.Compact(slices.Clone(order))) != len(order) {
		t.Fatalf("ids not strictly in log order: %q", order)
	}
}

func TestMergeHistory(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	msg := func(id string, ms int) eventstore.Message {
		return eventstore.Message{MsgID: id, Time: t0.Add(time.Duration(ms) * time.Millisecond)}
	}
	ev := func(id string, ms int) eventstore.ChannelEvent {
		return eventstore.ChannelEvent{MsgID: id, Time: t0.Add(time.Duration(ms) * time.Millisecond)}
	}
	tests := []struct {
		name string
		msgs []eventstore.Message
		evs  []eventstore.ChannelEvent
		want []string
	}{
		{"empty", nil, nil, []string{}},
		{"messages only", []eventstore.Message{msg("m1", 1), msg("m2", 2)}, nil, []string{"m1", "m2"}},
		{"events only", nil, []eventstore.ChannelEvent{ev("e1", 1)}, []string{"e1"}},
		{"interleaved", []eventstore.Message{msg("m1", 1), msg("m3", 3)}, []eventstore.ChannelEvent{ev("e2", 2), ev("e4", 4)},
			[]string{"m1", "e2", "m3", "e4"}},
		{"events first in a millisecond", []eventstore.Message{msg("m1", 5)}, []eventstore.ChannelEvent{ev("e1", 5), ev("e2", 5)},
			[]string{"e1", "e2", "m1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := []string{}
			for _, it := range mergeHistory(tc.msgs, tc.evs) {
				if it.ev != nil {
					got = append(got, it.ev.MsgID)
				} else {
					got = append(got, it.msg.MsgID)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
	items := messageItems([]eventstore.Message{msg("a", 1), msg("b", 2), msg("c", 3)})
	if len(firstN(items, 2)) != 2 || lastN(items, 2)[0].msg.MsgID != "b" || len(lastN(items, 9)) != 3 {
		t.Fatal("firstN/lastN cut the wrong end")
	}
}

func TestPlaybackRefOrder(t *testing.T) {
	refs := []playbackRef{
		{ms: 1, class: 2, seq: 9},
		{ms: 2},
		{ms: 2, class: 1, ev: "A"},
		{ms: 2, class: 1, ev: "B"},
		{ms: 2, class: 2, seq: 1},
		{ms: 2, class: 2, seq: 2},
	}
	for i := range refs {
		for j := range refs {
			if got := refs[i].less(refs[j]); got != (i < j) {
				t.Errorf("ref %d less than ref %d: %v", i, j, got)
			}
		}
	}
}

func TestEventOut(t *testing.T) {
	env := newRenderEnv(t, nil)
	plain, _ := env.client("plain")
	full, _ := env.client("full")
	full.caps.Store(uint32(capExtendedJoin | capChannelRename | capMessageTags | capServerTime | capBatch))
	join := eventstore.ChannelEvent{MsgID: "01J", Time: time.UnixMilli(1_700_000_000_123), Command: "JOIN", Source: "a!u@h",
		Account: "did:plc:a", Params: []string{"#c", "did:plc:a", "A"}}
	rename := eventstore.ChannelEvent{MsgID: "01R", Time: join.Time, Command: "RENAME", Source: "a!u@h", Params: []string{"#o", "#c", "why"}}
	if got := plain.eventOut(&join, "").msg.Params; !slices.Equal(got, []string{"#c"}) {
		t.Fatalf("JOIN without extended-join: %q", got)
	}
	out := full.eventOut(&join, "b1")
	if !slices.Equal(out.msg.Params, []string{"#c", "did:plc:a", "A"}) || out.msgid != "01J" || out.time != "2023-11-14T22:13:20.123Z" ||
		out.batch != "b1" || out.account != "did:plc:a" {
		t.Fatalf("JOIN with extended-join: %+v", out)
	}
	if plain.eventOut(&rename, "") != nil {
		t.Fatal("RENAME sent to a client without draft/channel-rename")
	}
	if full.eventOut(&rename, "") == nil {
		t.Fatal("RENAME not sent to a draft/channel-rename client")
	}
}
