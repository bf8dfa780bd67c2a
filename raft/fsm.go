package raft

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	hraft "github.com/hashicorp/raft"
)

// StateMachine is what the store replicates into. Apply must be
// deterministic: every node applies the same entries in the same order and
// must reach the same state.
type StateMachine interface {
	// Apply applies one committed entry. The returned value is handed to the
	// Propose call that created the entry, when that call was made on this
	// node; on other nodes it is dropped.
	Apply(index uint64, data []byte) any
	// Snapshot returns a point-in-time copy of the state. It is called
	// between two Apply calls and should be fast; the copy is written later,
	// concurrently with further Apply calls, so it must not share mutable
	// state with the live machine.
	Snapshot() (io.WriterTo, error)
	// Restore replaces the whole state with the one read from r.
	Restore(r io.Reader) error
}

// snapshotMagic starts every snapshot this package writes. It is followed
// by the applied index (big-endian uint64) and then the state machine's
// own bytes. Carrying the index inside the snapshot lets Restore put the
// applied index back exactly, because hashicorp/raft's FSM.Restore is not
// told which index the snapshot covers.
var snapshotMagic = [8]byte{'P', 'L', 'V', 'S', 'N', 'A', 'P', '1'}

const snapshotHeaderLen = len(snapshotMagic) + 8

var errBadSnapshotHeader = errors.New("raft: snapshot does not start with a palaver snapshot header")

func encodeSnapshotHeader(index uint64) []byte {
	header := make([]byte, snapshotHeaderLen)
	copy(header, snapshotMagic[:])
	binary.BigEndian.PutUint64(header[len(snapshotMagic):], index)
	return header
}

// readSnapshotHeader consumes the header and returns the applied index it
// records.
func readSnapshotHeader(r io.Reader) (uint64, error) {
	var header [snapshotHeaderLen]byte
	if _, err := io.ReadFull(r, header[:]); err != nil {
		return 0, fmt.Errorf("%w: %w", errBadSnapshotHeader, err)
	}
	if !bytes.Equal(header[:len(snapshotMagic)], snapshotMagic[:]) {
		return 0, errBadSnapshotHeader
	}
	return binary.BigEndian.Uint64(header[len(snapshotMagic):]), nil
}

// fsmAdapter turns a StateMachine into a hashicorp/raft FSM and keeps the
// applied index. hashicorp/raft calls Apply, Snapshot, Restore and
// StoreConfiguration from one goroutine, so they never race each other.
type fsmAdapter struct {
	sm        StateMachine
	applied   appliedIndex
	config    configCount
	responses responseRing
	// onConfiguration is called after a committed configuration entry or a
	// restore changed the membership; it must not block.
	onConfiguration func()
}

func newFSMAdapter(sm StateMachine, onConfiguration func()) *fsmAdapter {
	f := &fsmAdapter{sm: sm, onConfiguration: onConfiguration}
	f.config.stale = true
	return f
}

var (
	_ hraft.FSM                = (*fsmAdapter)(nil)
	_ hraft.ConfigurationStore = (*fsmAdapter)(nil)
)

func (f *fsmAdapter) Apply(entry *hraft.Log) any {
	resp := f.sm.Apply(entry.Index, entry.Data)
	f.responses.put(entry.Index, resp)
	f.applied.set(entry.Index)
	return resp
}

// StoreConfiguration is called for committed configuration entries. They
// carry no state machine effect, but counting them as applied lets callers
// wait on the index a membership change returned.
func (f *fsmAdapter) StoreConfiguration(index uint64, configuration hraft.Configuration) {
	f.config.set(countSuffrage(configuration))
	f.applied.set(index)
	f.notifyConfiguration()
}

func (f *fsmAdapter) notifyConfiguration() {
	if f.onConfiguration != nil {
		f.onConfiguration()
	}
}

func (f *fsmAdapter) Snapshot() (hraft.FSMSnapshot, error) {
	state, err := f.sm.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("raft: state machine snapshot: %w", err)
	}
	return &fsmSnapshot{index: f.applied.get(), state: state}, nil
}

func (f *fsmAdapter) Restore(source io.ReadCloser) error {
	index, err := readSnapshotHeader(source)
	if err != nil {
		return err
	}
	if err := f.sm.Restore(source); err != nil {
		return fmt.Errorf("raft: state machine restore at index %d: %w", index, err)
	}
	f.config.markStale()
	f.applied.set(index)
	f.notifyConfiguration()
	return nil
}

// responseRingSize is how many recent Apply responses are kept for
// proposals forwarded from this node: the leader's answer (the index) can
// arrive after this node already applied the entry.
const responseRingSize = 4096

// responseRing keeps the response of each of the last responseRingSize
// applied entries, by index.
type responseRing struct {
	// lock tier 9 (leaf)
	mu    sync.Mutex
	slots [responseRingSize]struct {
		index uint64
		resp  any
	}
}

func (r *responseRing) put(index uint64, resp any) {
	r.mu.Lock()
	slot := &r.slots[index%responseRingSize]
	slot.index, slot.resp = index, resp
	r.mu.Unlock()
}

// get returns the response applied at index, if it is still kept (a
// snapshot install skips entries, and old ones are overwritten).
func (r *responseRing) get(index uint64) (any, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	slot := r.slots[index%responseRingSize]
	if slot.index != index || index == 0 {
		return nil, false
	}
	return slot.resp, true
}

// suffrageCount is how many voters and non-voters a configuration has.
type suffrageCount struct{ voters, nonVoters int }

func countSuffrage(configuration hraft.Configuration) suffrageCount {
	var n suffrageCount
	for _, server := range configuration.Servers {
		switch server.Suffrage {
		case hraft.Voter:
			n.voters++
		case hraft.Nonvoter:
			n.nonVoters++
		}
	}
	return n
}

// fsmSnapshot writes the header and then the state machine's copy.
type fsmSnapshot struct {
	index uint64
	state io.WriterTo
}

func (s *fsmSnapshot) Persist(sink hraft.SnapshotSink) error {
	if err := s.persist(sink); err != nil {
		if cancelErr := sink.Cancel(); cancelErr != nil {
			return errors.Join(err, fmt.Errorf("raft: cancel snapshot sink: %w", cancelErr))
		}
		return err
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("raft: close snapshot sink: %w", err)
	}
	return nil
}

func (s *fsmSnapshot) persist(w io.Writer) error {
	if _, err := w.Write(encodeSnapshotHeader(s.index)); err != nil {
		return fmt.Errorf("raft: write snapshot header: %w", err)
	}
	if _, err := s.state.WriteTo(w); err != nil {
		return fmt.Errorf("raft: write state machine snapshot at index %d: %w", s.index, err)
	}
	return nil
}

func (s *fsmSnapshot) Release() {}
