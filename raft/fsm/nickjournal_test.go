package fsm

import (
	"fmt"
	"slices"
	"testing"
)

// The journal hands a reader exactly the nick changes after its cursor, and sends it to rebuild
// when it cannot: the zero cursor, a cursor of another state, one further behind than it keeps.
func TestNickChangesSince(t *testing.T) {
	m := New(quietLogger())
	var start NickCursor
	m.Read(func(st *State) {
		_, now, ok := st.NickChangesSince(NickCursor{})
		if ok {
			t.Error("the zero cursor was not sent to rebuild")
		}
		start = now
	})
	cmds := []Command{reg("s1", "alice", "did:plc:a"), ChangeNick{Session: "s1", Nick: "alicia"}, EndSession{Session: "s1"}}
	for i, c := range cmds {
		m.Apply(uint64(i+1), mustEncode(t, c, fmt.Sprint("r", i), "n", 1))
	}
	want := []NickChange{
		{true, "alice", "did:plc:a", "s1"}, {true, "alice", "did:plc:a", ""},
		{false, "alice", "did:plc:a", "s1"}, {true, "alicia", "did:plc:a", "s1"},
		{false, "alice", "did:plc:a", ""}, {true, "alicia", "did:plc:a", ""},
		{false, "alicia", "did:plc:a", "s1"},
	}
	var end NickCursor
	m.Read(func(st *State) {
		changes, now, ok := st.NickChangesSince(start)
		if got := slices.Collect(changes); !ok || !slices.Equal(got, want) {
			t.Errorf("changes %+v %v, want %+v", got, ok, want)
		}
		end = now
		if changes, _, ok := st.NickChangesSince(now); !ok || len(slices.Collect(changes)) != 0 {
			t.Error("a reader up to date got changes or was sent to rebuild")
		}
	})
	for i := range 2*nickJournalKeep + 1 {
		m.Apply(uint64(10+i), mustEncode(t, reg("s1", "bob", ""), fmt.Sprint("x", i), "n", 1))
		m.Apply(uint64(10+i), mustEncode(t, EndSession{Session: "s1"}, fmt.Sprint("y", i), "n", 1))
	}
	m.Read(func(st *State) {
		if _, _, ok := st.NickChangesSince(end); ok {
			t.Error("a reader further behind than the journal keeps was not sent to rebuild")
		}
		if _, _, ok := st.NickChangesSince(NickCursor{epoch: end.epoch + 1000, seq: end.seq}); ok {
			t.Error("a cursor of another state was taken")
		}
	})
}
