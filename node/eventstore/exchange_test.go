package eventstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestOriginAfterAndCursors(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/x.db"
	s, err := Open(ctx, Options{Path: path, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	base := time.UnixMilli(1_700_000_000_000)
	var mine []int64
	for i := 0; i < 10; i++ {
		origin := "node-a"
		if i%3 == 0 {
			origin = "node-b"
		}
		m := &Message{MsgID: fmt.Sprintf("01ARZ3NDEKTSV4RRFFQ69G5F%02d", i), Venue: "#x", Command: "PRIVMSG",
			Sender: "n!u@h", SenderNick: "n", Text: fmt.Sprint(i), Time: base.Add(time.Duration(i) * time.Millisecond), Origin: origin}
		if err := s.Append(ctx, m); err != nil {
			t.Fatal(err)
		}
		if origin == "node-a" {
			mine = append(mine, m.Seq)
		}
	}
	got, err := s.OriginAfter(ctx, "node-a", 0, 100)
	if err != nil || len(got) != len(mine) {
		t.Fatalf("OriginAfter = %d rows (%v), want %d", len(got), err, len(mine))
	}
	for i, m := range got {
		if m.Seq != mine[i] || m.Origin != "node-a" {
			t.Fatalf("row %d = seq %d origin %s, want seq %d", i, m.Seq, m.Origin, mine[i])
		}
	}
	page, _ := s.OriginAfter(ctx, "node-a", mine[2], 2)
	if len(page) != 2 || page[0].Seq != mine[3] {
		t.Fatalf("page after %d = %v", mine[2], page)
	}
	for _, tc := range []struct {
		after, through int64
		limit          int
		want           []int64
	}{
		{0, mine[2], 100, mine[:3]},
		{mine[0], mine[3], 2, mine[1:3]},
		{mine[1], mine[1], 100, nil},
		{mine[3], mine[4], 100, mine[4:5]}, // node-b's row between them is skipped
	} {
		got, err := s.OriginThrough(ctx, "node-a", tc.after, tc.through, tc.limit)
		var seqs []int64
		for _, m := range got {
			seqs = append(seqs, m.Seq)
		}
		if err != nil || fmt.Sprint(seqs) != fmt.Sprint(tc.want) {
			t.Fatalf("OriginThrough(%d, %d, %d) = %v (%v), want %v", tc.after, tc.through, tc.limit, seqs, err, tc.want)
		}
	}
	if _, err := s.OriginAfter(ctx, "node-a", 0, 0); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("limit 0: %v", err)
	}

	if c, err := s.Cursor(ctx, "node-b"); err != nil || c != 0 {
		t.Fatalf("fresh cursor = %d, %v", c, err)
	}
	for _, seq := range []int64{5, 9, 7} { // never moves backwards
		if err := s.SetCursor(ctx, "node-b", seq); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, Options{Path: path, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if c, err := s.Cursor(ctx, "node-b"); err != nil || c != 9 {
		t.Fatalf("cursor after reopen = %d, %v; want 9", c, err)
	}
}

func TestDeletionsLog(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: t.TempDir() + "/d.db", NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.UnixMilli(1_700_000_000_000)
	for i, id := range []string{"01ARZ3NDEKTSV4RRFFQ69G5FA1", "01ARZ3NDEKTSV4RRFFQ69G5FA2"} {
		if err := s.Append(ctx, &Message{MsgID: id, Venue: "#d", Command: "PRIVMSG", Sender: "a!u@h", SenderNick: "a",
			Text: "x", Time: now.Add(time.Duration(i) * time.Millisecond), Origin: "node-a"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteAt(ctx, "01ARZ3NDEKTSV4RRFFQ69G5FA1", now, "node-b", Deleter{Sender: "b!u@h", Tags: map[string]string{"+draft/delete": "x"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteAt(ctx, "01ARZ3NDEKTSV4RRFFQ69G5FA1", now, "node-b", Deleter{Sender: "b!u@h", Tags: map[string]string{"+draft/delete": "x"}}); err != nil { // already deleted: nothing filed
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "01ARZ3NDEKTSV4RRFFQ69G5FA2", now); err != nil { // applied from elsewhere: not filed
		t.Fatal(err)
	}
	got, err := s.DeletionsAfter(ctx, "node-b", 0, 10)
	if err != nil || len(got) != 1 || got[0].RootMsgID != "01ARZ3NDEKTSV4RRFFQ69G5FA1" || got[0].Venue != "#d" ||
		got[0].Sender != "b!u@h" || got[0].Tags["+draft/delete"] != "x" {
		t.Fatalf("deletions = %+v, %v", got, err)
	}
	if rest, _ := s.DeletionsAfter(ctx, "node-b", got[0].Seq, 10); len(rest) != 0 {
		t.Fatalf("after the last: %+v", rest)
	}
}
