package eventstore

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDuplicatesAroundTheMsgIDCeiling: the intake asks the database only about msgids that are not
// pending and not above the greatest msgid the database may hold (storedCeiling, admit.go).
// Whatever side of it a msgid falls on, before and after the store is reopened, a stored msgid is
// answered ErrDuplicate and stored once, and a new one is stored.
func TestDuplicatesAroundTheMsgIDCeiling(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "events.db")
	open := func() *Store {
		s, err := Open(ctx, Options{Path: path, NoSync: true, Logger: quietLogger})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	}
	s := open()
	defer func() { s.Close() }()
	when := at(0)
	msg := func(id string) *Message {
		when = when.Add(time.Millisecond)
		return newMsg(id, "#c", when, "text of "+id)
	}
	steps := []struct {
		name   string
		reopen bool     // close and reopen the store first
		ids    []string // one Append call
		dups   []string // the msgids it must report as duplicates
	}{
		{name: "new, rising", ids: []string{"01B", "01D", "01F"}},
		{name: "the greatest again", ids: []string{"01F"}, dups: []string{"01F"}},
		{name: "one below the greatest again", ids: []string{"01D"}, dups: []string{"01D"}},
		{name: "new below the greatest (a peer's older msgid)", ids: []string{"01C"}},
		{name: "new above, twice in one call", ids: []string{"01H", "01H"}, dups: []string{"01H"}},
		{name: "after reopening: the greatest again", reopen: true, ids: []string{"01H"}, dups: []string{"01H"}},
		{name: "after reopening: a lower one again, beside a new one", ids: []string{"01B", "01J"}, dups: []string{"01B"}},
		{name: "after reopening: new below and above", reopen: true, ids: []string{"01A", "01K"}},
		{name: "everything again", ids: []string{"01A", "01B", "01C", "01D", "01F", "01H", "01J", "01K"},
			dups: []string{"01A", "01B", "01C", "01D", "01F", "01H", "01J", "01K"}},
	}
	stored := map[string]bool{}
	for _, st := range steps {
		if st.reopen {
			if err := s.Close(); err != nil {
				t.Fatalf("%s: Close: %v", st.name, err)
			}
			s = open()
		}
		var msgs []*Message
		for _, id := range st.ids {
			msgs = append(msgs, msg(id))
		}
		err := s.Append(ctx, msgs...)
		if len(st.dups) == 0 {
			if err != nil {
				t.Fatalf("%s: Append: %v", st.name, err)
			}
		} else {
			if !errors.Is(err, ErrDuplicate) {
				t.Fatalf("%s: Append: %v, want ErrDuplicate", st.name, err)
			}
			for _, id := range st.dups {
				if !strings.Contains(err.Error(), id) {
					t.Errorf("%s: %s not reported in %v", st.name, id, err)
				}
			}
		}
		for _, id := range st.ids {
			stored[id] = true
		}
		for id := range stored {
			m, err := s.Get(ctx, id)
			if err != nil {
				t.Fatalf("%s: Get %s: %v", st.name, id, err)
			}
			if m.Text != "text of "+id {
				t.Errorf("%s: %s holds %q", st.name, id, m.Text)
			}
		}
	}
	if n, err := s.Count(ctx); err != nil || n != int64(len(stored)) {
		t.Errorf("Count = %d, %v; want %d", n, err, len(stored))
	}
}
