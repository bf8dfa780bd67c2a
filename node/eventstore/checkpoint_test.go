package eventstore

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// TestCheckpointsRunOffTheWriter: the log is copied into the database file by the checkpointer,
// without the writer's own checkpoint (whose threshold a few appends are far from reaching), and
// what it copied reads back after a reopen.
func TestCheckpointsRunOffTheWriter(t *testing.T) {
	s, path := openTestStore(t, false)
	ctx := context.Background()
	done := make(chan error, 64)
	hook := func(err error) { done <- err }
	s.ckpt.checkpointed.Store(&hook)
	before := fileSize(t, path)
	for i := range 20 {
		if err := s.Append(ctx, newMsg(fmt.Sprintf("ck%02d", i), "#c", at(0), "checkpointed")); err != nil {
			t.Fatal(err)
		}
	}
	if err := waitFor(t, done, "a checkpoint"); err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	// Every append committed before the first checkpoint's nudge is in the file once a checkpoint
	// that began after it returns; the later ones may need one more.
	for fileSize(t, path) <= before {
		if err := waitFor(t, done, "another checkpoint"); err != nil {
			t.Fatalf("checkpoint: %v", err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(ctx, Options{Path: path, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n, err := r.Count(ctx); err != nil || n != 20 {
		t.Fatalf("Count after reopen = %d, %v; want 20", n, err)
	}
}

// TestCheckpointsNoSync: a store without fsync has no checkpointer (SQLite's own checkpoints in
// the writer remain) and still writes and reads.
func TestCheckpointsNoSync(t *testing.T) {
	s, _ := openTestStore(t, true)
	if s.ckpt != nil {
		t.Fatal("a NoSync store started a checkpointer")
	}
	if err := s.Append(context.Background(), newMsg("ns1", "#c", at(0), "x")); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}
