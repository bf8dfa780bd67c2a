package raft

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"

	hraft "github.com/hashicorp/raft"
)

func TestSnapshotRoundTripKeepsAppliedIndex(t *testing.T) {
	source := newFSMAdapter(&listMachine{}, nil)
	for i, item := range []string{"a", "b", "c"} {
		source.Apply(&hraft.Log{Index: uint64(10 + i), Type: hraft.LogCommand, Data: []byte(item)})
	}
	snap, err := source.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// Applies after Snapshot must not leak into the persisted copy.
	source.Apply(&hraft.Log{Index: 13, Type: hraft.LogCommand, Data: []byte("later")})
	sink := &memorySink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatalf("Persist: %v", err)
	}
	if !sink.closed || sink.cancelled {
		t.Fatalf("sink closed=%v cancelled=%v, want closed only", sink.closed, sink.cancelled)
	}

	restoredMachine := &listMachine{}
	restored := newFSMAdapter(restoredMachine, nil)
	restored.applied.set(99) // a restore replaces, even backwards
	if err := restored.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if got := restored.applied.get(); got != 12 {
		t.Fatalf("applied index after restore = %d, want 12", got)
	}
	if got := restoredMachine.items(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("restored items = %q", got)
	}
}

func TestRestoreErrors(t *testing.T) {
	valid := append(encodeSnapshotHeader(4), []byte(`{"items":["a"],"indexes":[4]}`)...)
	tests := []struct {
		name   string
		data   []byte
		wantIs error
	}{
		{"empty", nil, errBadSnapshotHeader},
		{"short header", valid[:snapshotHeaderLen-1], errBadSnapshotHeader},
		{"wrong magic", append([]byte("NOTASNAP"), valid[8:]...), errBadSnapshotHeader},
		{"state machine rejects body", append(encodeSnapshotHeader(4), []byte("{not json")...), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFSMAdapter(&listMachine{}, nil)
			f.applied.set(2)
			err := f.Restore(io.NopCloser(bytes.NewReader(tt.data)))
			if err == nil {
				t.Fatal("Restore succeeded")
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Fatalf("Restore = %v, want %v", err, tt.wantIs)
			}
			if got := f.applied.get(); got != 2 {
				t.Fatalf("failed restore moved applied index to %d", got)
			}
		})
	}
}

func TestPersistCancelsSinkOnWriteError(t *testing.T) {
	writeErr := errors.New("disk full")
	snap := &fsmSnapshot{index: 3, state: failingWriterTo{err: writeErr}}
	sink := &memorySink{}
	err := snap.Persist(sink)
	if !errors.Is(err, writeErr) {
		t.Fatalf("Persist = %v, want %v", err, writeErr)
	}
	if !sink.cancelled || sink.closed {
		t.Fatalf("sink cancelled=%v closed=%v, want cancelled only", sink.cancelled, sink.closed)
	}
}

func TestStoreConfigurationCountsSuffrageAndAdvancesIndex(t *testing.T) {
	notified := 0
	f := newFSMAdapter(&listMachine{}, func() { notified++ })
	f.StoreConfiguration(7, hraft.Configuration{Servers: []hraft.Server{
		{ID: "a", Suffrage: hraft.Voter},
		{ID: "b", Suffrage: hraft.Voter},
		{ID: "c", Suffrage: hraft.Nonvoter},
	}})
	if got := f.applied.get(); got != 7 {
		t.Fatalf("applied index = %d, want 7", got)
	}
	if notified != 1 {
		t.Fatalf("configuration callback ran %d times, want 1", notified)
	}
	fetched := false
	want := suffrageCount{voters: 2, nonVoters: 1}
	if got := f.config.get(func() (suffrageCount, bool) { fetched = true; return suffrageCount{}, true }); got != want || fetched {
		t.Fatalf("suffrage = %+v (fetched %v), want %+v from the cache", got, fetched, want)
	}
	f.config.markStale()
	want = suffrageCount{voters: 5}
	if got := f.config.get(func() (suffrageCount, bool) { return want, true }); got != want {
		t.Fatalf("suffrage after markStale = %+v, want the fetched %+v", got, want)
	}
}

func TestResponseRing(t *testing.T) {
	var ring responseRing
	ring.put(5, "five")
	ring.put(5+responseRingSize, "overwrites five")
	tests := []struct {
		index  uint64
		want   any
		wantOK bool
	}{
		{0, nil, false},
		{5, nil, false},
		{5 + responseRingSize, "overwrites five", true},
		{6, nil, false},
	}
	for _, tt := range tests {
		got, ok := ring.get(tt.index)
		if ok != tt.wantOK || got != tt.want {
			t.Errorf("get(%d) = %v, %v; want %v, %v", tt.index, got, ok, tt.want, tt.wantOK)
		}
	}
}

func FuzzReadSnapshotHeader(f *testing.F) {
	f.Add(encodeSnapshotHeader(0))
	f.Add(append(encodeSnapshotHeader(1<<63), "body"...))
	f.Add([]byte("PLVSNAP"))
	f.Add([]byte("PLVSNAP2\x00\x00\x00\x00\x00\x00\x00\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		index, err := readSnapshotHeader(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, errBadSnapshotHeader) {
				t.Fatalf("error %v does not wrap errBadSnapshotHeader", err)
			}
			return
		}
		if !bytes.Equal(encodeSnapshotHeader(index), data[:snapshotHeaderLen]) {
			t.Fatalf("header %x decoded to %d, which encodes differently", data[:snapshotHeaderLen], index)
		}
	})
}

// memorySink is a SnapshotSink that keeps the bytes in memory.
type memorySink struct {
	bytes.Buffer
	closed, cancelled bool
}

func (s *memorySink) ID() string    { return "memory" }
func (s *memorySink) Close() error  { s.closed = true; return nil }
func (s *memorySink) Cancel() error { s.cancelled = true; return nil }

type failingWriterTo struct{ err error }

func (w failingWriterTo) WriteTo(io.Writer) (int64, error) { return 0, w.err }
