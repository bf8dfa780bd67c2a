package exchange

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/palaver-chat/palaver/node/eventstore"
)

// mapCursors is a cursor table in memory, moving forward only as the event store's does.
type mapCursors struct {
	rows map[string]int64
	fail string // a row whose read fails
}

func (m *mapCursors) Cursor(_ context.Context, name string) (int64, error) {
	if name == m.fail {
		return 0, errors.New("disk gone")
	}
	return m.rows[name], nil
}

func (m *mapCursors) SetCursor(_ context.Context, name string, seq int64) error {
	m.rows[name] = max(m.rows[name], seq)
	return nil
}

func TestCursorScheme(t *testing.T) {
	for _, tc := range []struct {
		key          CursorKey
		name, legacy string
	}{
		{CursorKey{In, LogMessages, "n2"}, "in:messages:n2", "n2"},
		{CursorKey{In, LogDeletes, "n2"}, "in:deletes:n2", "del:n2"},
		{CursorKey{In, LogReactions, "n2"}, "in:reactions:n2", "react:n2"},
		{CursorKey{Out, LogMessages, "did:web:b.example"}, "out:messages:did:web:b.example", "fed-out:did:web:b.example"},
		{CursorKey{Out, LogDeletes, "did:web:b.example"}, "out:deletes:did:web:b.example", "fed-out-del:did:web:b.example"},
		{CursorKey{Out, LogReactions, "did:web:b.example"}, "out:reactions:did:web:b.example", "fed-out-react:did:web:b.example"},
		{CursorKey{Out, Log("typing"), "x"}, "out:typing:x", ""},
	} {
		if got := tc.key.String(); got != tc.name {
			t.Errorf("%+v: name %q, want %q", tc.key, got, tc.name)
		}
		if got := tc.key.legacy(); got != tc.legacy {
			t.Errorf("%+v: former name %q, want %q", tc.key, got, tc.legacy)
		}
	}
}

func TestReadCursorKeepsFormerRowsReadable(t *testing.T) {
	ctx := context.Background()
	key := CursorKey{Out, LogDeletes, "did:web:b.example"}
	for _, tc := range []struct {
		name      string
		rows      map[string]int64
		want      int64
		afterSet7 int64
	}{
		{"nothing yet", map[string]int64{}, 0, 7},
		{"only the former row", map[string]int64{"fed-out-del:did:web:b.example": 9}, 9, 9},
		{"both, the new ahead", map[string]int64{"fed-out-del:did:web:b.example": 4, "out:deletes:did:web:b.example": 5}, 5, 7},
		{"another peer's former row", map[string]int64{"fed-out-del:did:web:c.example": 9}, 0, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &mapCursors{rows: tc.rows}
			if got, err := ReadCursor(ctx, st, key); err != nil || got != tc.want {
				t.Fatalf("ReadCursor = %d, %v; want %d", got, err, tc.want)
			}
			if err := WriteCursor(ctx, st, key, 7); err != nil {
				t.Fatal(err)
			}
			if got, _ := ReadCursor(ctx, st, key); got != tc.afterSet7 {
				t.Fatalf("after writing 7: %d, want %d", got, tc.afterSet7)
			}
			if _, written := st.rows["fed-out-del:did:web:b.example"]; written && tc.rows["fed-out-del:did:web:b.example"] == 0 {
				t.Fatal("the former row was written")
			}
		})
	}
	st := &mapCursors{rows: map[string]int64{}, fail: "del:n2"}
	if _, err := ReadCursor(ctx, st, CursorKey{In, LogDeletes, "n2"}); err == nil {
		t.Fatal("a failed read of the former row went unnoticed")
	}
}

// TestPullResumesFromAFormerCursorRow: a node that stored an origin's rows under the former cursor
// name pulls only what came after them.
func TestPullResumesFromAFormerCursorRow(t *testing.T) {
	c := newCluster(t, "a", "b")
	a, b := c.nodes["did:web:a"], c.nodes["did:web:b"]
	ctx := context.Background()
	var ids []string
	for i := range 5 {
		m := &eventstore.Message{MsgID: ulid.Make().String(), Venue: "#x", Command: "PRIVMSG", Sender: "a!u@h",
			SenderNick: "a", Text: fmt.Sprint("m", i), Time: time.Now(), Origin: "a"}
		if err := a.store.Append(ctx, m); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.MsgID)
	}
	if err := b.store.SetCursor(ctx, "a", 3); err != nil { // the former name of in:messages:a
		t.Fatal(err)
	}
	b.x.PullAll(ctx)
	for i, id := range ids {
		want := 0
		if i >= 3 {
			want = 1
		}
		if got := b.count(id); got != want {
			t.Fatalf("message %d delivered %d times, want %d", i+1, got, want)
		}
	}
	if got, _ := b.store.Cursor(ctx, "in:messages:a"); got != 5 {
		t.Fatalf("in:messages:a = %d, want 5", got)
	}
}
