package eventstore

import (
	"context"
	"testing"
	"time"
)

// TestGenerationMovesOnEveryWrite: each write that can change a read's answer moves the
// generation on once it has returned; reads leave it alone.
func TestGenerationMovesOnEveryWrite(t *testing.T) {
	s, _ := openTestStore(t, true)
	ctx := context.Background()
	root := newMsg("01J0000000000000000000000A", "#gen", at(0), "root")
	writes := []struct {
		name  string
		write func() error
	}{
		{"append", func() error { return s.Append(ctx, root) }},
		{"duplicate append", func() error { s.Append(ctx, root); return nil }},
		{"edit", func() error {
			return s.Append(ctx, newEdit("01J0000000000000000000000B", root.MsgID, root, at(time.Second), "edited"))
		}},
		{"react", func() error { return s.React(ctx, root.MsgID, "did:plc:bob", "bob", "👍", at(2*time.Second)) }},
		{"unreact", func() error { return s.Unreact(ctx, root.MsgID, "did:plc:bob", "👍") }},
		{"delete", func() error { return s.Delete(ctx, root.MsgID, at(3*time.Second)) }},
	}
	for _, w := range writes {
		before := s.Generation()
		if err := w.write(); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		if s.Generation() == before {
			t.Errorf("%s: generation stayed %d", w.name, before)
		}
		reads := s.Generation()
		if _, err := s.PageBeforeUnix(ctx, "#gen", 0, 10); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Reactions(ctx, []string{root.MsgID}); err != nil {
			t.Fatal(err)
		}
		if s.Generation() != reads {
			t.Errorf("%s: reads moved the generation", w.name)
		}
	}
}
