package eventstore

import (
	"context"
	"testing"
	"time"
)

// Dead letters are recorded once each, survive a reopen, and are listed newest first and counted
// per peer.
func TestDeadLetters(t *testing.T) {
	s, path := openTestStore(t, false)
	ctx := context.Background()
	at := time.UnixMilli(1_700_000_000_000).UTC()
	first := []DeadLetter{
		{Peer: "did:web:a", Origin: "a", Log: "messages", Seq: 7, MsgID: "m7", Reason: "oversize", Detail: "text", Time: at},
		{Peer: "did:web:a", Origin: "a", Log: "reactions", Seq: 2, MsgID: "r2", Reason: "malformed", Time: at},
		{Peer: "did:web:b", Origin: "b", Log: "deletes", Seq: 1, MsgID: "m1", Reason: "not-op", Time: at},
	}
	if err := s.AddDeadLetters(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := s.AddDeadLetters(ctx, first[:1]); err != nil { // refused again after a reconnect
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.DeadLetters(ctx, "did:web:a", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != first[1] || got[1] != first[0] {
		t.Fatalf("dead letters of a: %+v", got)
	}
	all, err := s.DeadLetters(ctx, "", 10)
	if err != nil || len(all) != 3 {
		t.Fatalf("every dead letter: %+v, %v", all, err)
	}
	counts, err := s.DeadLetterCounts(ctx)
	if err != nil || counts["did:web:a"] != 2 || counts["did:web:b"] != 1 {
		t.Fatalf("counts %v, %v", counts, err)
	}
}
