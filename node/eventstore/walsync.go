package eventstore

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
)

// Durable commits without holding the writer.
//
// The write connection runs with synchronous=NORMAL: a commit writes its frames to the WAL file
// but does not fsync it (checkpoints still sync the WAL before copying it into the database and
// the database after, and the WAL header is synced when the file is reused, so NORMAL never loses
// a transaction that was synced). The store then fsyncs the WAL itself, through a descriptor of
// its own, before it answers a call that waits for the database (a delete, a direct write): such a
// call returns only after its transaction's frames reached the disk, exactly as with
// synchronous=FULL. Appends are acknowledged earlier, by the intake log (intake.go); for them the
// WAL's fsync only lets the log drop segments, so the syncer does it at most every
// databaseSyncEvery. Either way the writer hands a committed batch to the syncer goroutine and
// goes on with the next batch, so the CPU work of batch n+1 overlaps the fsync of batch n.
//
// A committed but not yet synced transaction is visible to readers for about one fsync. Readers
// whose answers leave the node as a log position (the exchange's OriginAfter, DeletionsAfter,
// ReactionLogAfter) call awaitDurable after reading, so no other node ever holds a row that a
// crash could take back (and whose seq a later row could reuse).
//
// Sequencing: every commit on the write connection (the writer's batches and the direct writes of
// reactions and cursors) bumps started before it begins and completed after it returns. A sync
// notes completed before its fsync and afterwards publishes it as synced: every commit counted
// there had finished writing before the fsync began. Since the connection runs one commit at a
// time, synced >= started (noted after a read) proves that every commit the read could have seen
// is on the disk.
type walSync struct {
	path string

	started, completed, synced atomic.Uint64

	mu  sync.Mutex // serializes syncs; guards f and err
	f   *os.File
	err error // sticky: after a failed fsync the file's state is unknown, so nothing is acknowledged again
	// fsync is f.Sync; tests replace it to hold or fail a sync.
	fsync func(*os.File) error
}

func newWALSync(dbPath string) *walSync {
	return &walSync{path: dbPath + "-wal", fsync: (*os.File).Sync}
}

// beginCommit and endCommit bracket every commit on the write connection.
func (w *walSync) beginCommit() { w.started.Add(1) }
func (w *walSync) endCommit()   { w.completed.Add(1) }

// sync makes every commit that completed before the call durable. Concurrent calls are serialized;
// a call that finds its commits synced by another returns without an fsync of its own.
func (w *walSync) sync() error {
	return w.syncWhen(func(target uint64) bool { return w.synced.Load() < target })
}

// syncVisible makes durable every frame written before the call, including those of a commit that
// is still returning (its rows are already visible): it fsyncs unless every started commit is
// synced.
func (w *walSync) syncVisible() error {
	return w.syncWhen(func(uint64) bool { return !w.durableNow() })
}

// syncAll fsyncs whatever the WAL holds (Open calls it once, for the migrations).
func (w *walSync) syncAll() error { return w.syncWhen(func(uint64) bool { return true }) }

func (w *walSync) syncWhen(needed func(target uint64) bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	target := w.completed.Load()
	if !needed(target) {
		return nil
	}
	f, err := w.file()
	if err == nil {
		err = w.fsync(f)
	}
	if err != nil {
		w.err = fmt.Errorf("eventstore: fsync %s: %w", w.path, err)
		return w.err
	}
	if target > w.synced.Load() {
		w.synced.Store(target)
	}
	return nil
}

// durableNow reports whether every commit started so far is synced.
func (w *walSync) durableNow() bool { return w.synced.Load() >= w.started.Load() }

// file returns the open WAL file. SQLite removes the WAL only when the last connection to the
// database closes, and the store holds its write connection open, so one descriptor normally
// lasts the store's life; a descriptor whose file was unlinked anyway is replaced, and the
// directory is synced after every open so that a WAL created meanwhile has a durable name.
func (w *walSync) file() (*os.File, error) {
	if w.f != nil {
		if st, err := w.f.Stat(); err == nil && linked(st) {
			return w.f, nil
		}
		w.f.Close() //nolint:errcheck // replaced below; nothing was written through it
		w.f = nil
	}
	f, err := os.OpenFile(w.path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	if err := syncDir(filepath.Dir(w.path)); err != nil {
		f.Close() //nolint:errcheck // the error returned is the directory's
		return nil, err
	}
	w.f = f
	return f, nil
}

func linked(st os.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	return !ok || sys.Nlink > 0
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

func (w *walSync) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

// Store-side helpers; with NoSync there is no walSync and they do nothing.

// committing brackets a commit on the write connection; call the returned func once the commit
// (or its failure) has returned.
func (s *Store) committing() (done func()) {
	if s.wal == nil {
		return func() {}
	}
	s.wal.beginCommit()
	return func() {
		s.wal.endCommit()
		s.ckpt.nudge()
	}
}

// syncCommitted makes every completed commit durable (the direct writers call it after their
// commit).
func (s *Store) syncCommitted() error {
	if s.wal == nil {
		return nil
	}
	return s.wal.sync()
}

// awaitDurable is called after a read whose rows leave the node: it returns once every commit the
// read could have seen is durable.
func (s *Store) awaitDurable() error {
	if s.wal == nil || s.wal.durableNow() {
		return nil
	}
	return s.wal.syncVisible()
}
