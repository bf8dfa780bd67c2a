package eventstore

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// fakeChannels is a Scope over a map the test edits: venue → incarnation and public flag.
type fakeChannels struct {
	mu sync.Mutex
	ch map[string]fakeChannel
}

type fakeChannel struct {
	inc    string
	public bool
}

func (f *fakeChannels) set(venue, inc string, public bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if inc == "-" {
		delete(f.ch, venue)
		return
	}
	f.ch[venue] = fakeChannel{inc, public}
}

func (f *fakeChannels) scope(venue string) (string, bool, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.ch[venue]
	return c.inc, c.public, ok
}

func openScopedStore(t *testing.T, path string, f *fakeChannels) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{Path: path, NoSync: true, Logger: quietLogger, Scope: f.scope})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestScopeHidesRestrictedHistoryOfEarlierIncarnations: a channel's restricted messages are served
// only while the channel that holds them lives; its public ones outlive it.
func TestScopeHidesRestrictedHistoryOfEarlierIncarnations(t *testing.T) {
	ctx := context.Background()
	f := &fakeChannels{ch: map[string]fakeChannel{}}
	s := openScopedStore(t, filepath.Join(t.TempDir(), "events.db"), f)

	f.set("#x", "a.1", true)
	mustAppend(t, s, newMsg("01PUBLIC0000000000000000A1", "#x", at(1*time.Second), "open words"))
	f.set("#x", "a.1", false) // +i
	secret := newMsg("01SECRET0000000000000000A2", "#x", at(2*time.Second), "secret words")
	mustAppend(t, s, secret)
	if secret.Incarnation != "a.1" || secret.Public {
		t.Fatalf("stamped %q public=%v, want a.1 restricted", secret.Incarnation, secret.Public)
	}
	dm := newMsg("01DMDMDM000000000000000A03", "dm:did:a,did:b", at(3*time.Second), "secret words too")
	mustAppend(t, s, dm)
	if dm.Incarnation != "" || dm.Public {
		t.Fatalf("a DM was stamped: %q %v", dm.Incarnation, dm.Public)
	}
	// A copy from another node keeps the stamp it carries.
	copied := newMsg("01COPIED0000000000000000A4", "#x", at(4*time.Second), "copied secret words")
	copied.Incarnation = "a.1"
	f.set("#x", "b.2", true)
	mustAppend(t, s, copied)
	if copied.Incarnation != "a.1" || copied.Public {
		t.Fatalf("a copied message was stamped again: %q %v", copied.Incarnation, copied.Public)
	}

	both := []string{"01PUBLIC0000000000000000A1", "01SECRET0000000000000000A2", "01COPIED0000000000000000A4"}
	cases := []struct {
		name   string
		inc    string // "-": the channel does not exist
		public bool
		want   []string
	}{
		{"same incarnation, restricted now", "a.1", false, both},
		{"same incarnation, public now", "a.1", true, both},
		{"channel gone", "-", false, []string{"01PUBLIC0000000000000000A1"}},
		{"new incarnation", "b.2", true, []string{"01PUBLIC0000000000000000A1"}},
		{"new restricted incarnation", "b.2", false, []string{"01PUBLIC0000000000000000A1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.set("#x", tc.inc, tc.public)
			got, err := s.Latest(ctx, "#x", Bound{}, 10)
			wantIDs(t, got, err, tc.want, nil)
			got, err = s.Before(ctx, "#x", Bound{}, 10)
			wantIDs(t, got, err, tc.want, nil)
			got, err = s.PageBeforeUnix(ctx, "#x", 0, 10)
			wantIDs(t, got, err, tc.want, nil)
			got, err = s.ExportAfter(ctx, "#x", 0, 10)
			wantIDs(t, got, err, tc.want, nil)
			got, err = s.Around(ctx, "#x", Bound{MsgID: "01SECRET0000000000000000A2"}, 10)
			wantIDs(t, got, err, tc.want, nil)
			got, err = s.Search(ctx, "#x", "words", 0, 10)
			newestFirst := append([]string(nil), tc.want...)
			for i, j := 0, len(newestFirst)-1; i < j; i, j = i+1, j-1 {
				newestFirst[i], newestFirst[j] = newestFirst[j], newestFirst[i]
			}
			wantIDs(t, got, err, newestFirst, nil)
			raw, err := s.Get(ctx, "01SECRET0000000000000000A2")
			if err != nil {
				t.Fatal(err)
			}
			if got, want := s.Visible(raw), len(tc.want) == 3; got != want {
				t.Fatalf("Visible(secret) = %v, want %v", got, want)
			}
			if got, _ := s.Get(ctx, dm.MsgID); !s.Visible(got) {
				t.Fatalf("a DM is not visible")
			}
		})
	}
}

// TestScopeMigratesOldStores: rows stored before incarnations existed count as restricted rows
// of the channel's first recorded incarnation (""): a channel that has existed since serves them,
// a channel created after the upgrade does not.
func TestScopeMigratesOldStores(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "events.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at_ms INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for v := 1; v <= 5; v++ {
		if err := applyMigration(ctx, db, v); err != nil {
			t.Fatal(err)
		}
	}
	// The row as the version-5 writer stored it.
	if _, err := db.ExecContext(ctx, `INSERT INTO messages(msgid, venue, command, sender, sender_nick, sender_did,
		text, tags_json, time_ms, origin, okey) VALUES ('01OLDROW000000000000000A01', '#x', 'PRIVMSG', 'a!a@h', 'a', '',
		'old words', '{}', ?1, 'node-a', ?1 << 20)`, at(time.Second).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	f := &fakeChannels{ch: map[string]fakeChannel{"#x": {"", true}}}
	s := openScopedStore(t, path, f)
	got, err := s.Latest(ctx, "#x", Bound{}, 10)
	wantIDs(t, got, err, []string{"01OLDROW000000000000000A01"}, nil)
	if got[0].Incarnation != "" || got[0].Public {
		t.Fatalf("migrated row reads as %q public=%v", got[0].Incarnation, got[0].Public)
	}
	f.set("#x", "c.3", true)
	got, err = s.Latest(ctx, "#x", Bound{}, 10)
	wantIDs(t, got, err, nil, nil)
}
