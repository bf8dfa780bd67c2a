package eventstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// readerMmapBytes is how much of the database file each read connection maps: SQLite's ceiling
// (SQLITE_MAX_MMAP_SIZE); a larger file's remainder is read with pread. It is address space, not
// memory: the mapped pages are the kernel's page cache, shared by every connection.
const readerMmapBytes = 2147418112

// applyBatchFactor times MaxBatch is how many messages the writer applies in one transaction at
// most: the intake log has acknowledged them already, so a larger transaction costs no caller
// any time, and each commit's fixed cost (the pages of every venue it touches, its search-index
// segment) is shared by more messages.
const applyBatchFactor = 8

// defaultApplyLinger is how long the writer gathers acknowledged messages before it commits them,
// when no read waits for them (see runWriter).
const defaultApplyLinger = 10 * time.Millisecond

// Store is a node's event store. It is safe for concurrent use.
type Store struct {
	log      *slog.Logger
	maxBatch int // messages per intake batch
	applyMax int // messages per applied transaction

	writeDB    *sql.DB // one connection: the writer goroutine, migrations, and the direct writes of reactions and cursors
	readDB     *sql.DB // a pool of query_only connections
	w          writeStatements
	rootChunks rootChunkStatements // the writer's multi-row root inserts (roots.go)
	ftsChunks  ftsChunkStatements  // the writer's multi-row search-index inserts (ftsrows.go)
	r          readStatements

	reqs       chan *writeRequest // the intake queue; closed by Close
	writerDone chan struct{}      // closed once the writer and the syncer have answered every request

	// The intake log (intake.go, admit.go): intake, nextSeq and intakeErr belong to the intake
	// goroutine, which hands acknowledged batches to the writer on applyQ. pendingIDs holds the
	// msgids acknowledged and not yet applied. ackedSeq is the greatest seq acknowledged,
	// appliedSeq the greatest applied (appliedCh is closed and replaced at each advance), and
	// durableSeq the greatest applied and fsynced in the database.
	intake     *intakeLog
	nextSeq    int64
	intakeErr  error
	applyQ     chan []*writeRequest
	pendingMu  sync.Mutex
	pendingIDs map[string]struct{}
	// storedCeiling (under pendingMu) is at least the greatest msgid in the database that is not
	// pending: the greatest stored when the store opened, raised as the writer lets go of pending
	// msgids. A msgid above it and not pending is new, so admit does not ask the database about
	// it. msgids are ULIDs and a node mints its own in increasing order, so a node's own messages
	// are above it but for the few minted before a message the writer has applied since.
	storedCeiling string
	ackedSeq      atomic.Int64
	appliedSeq    atomic.Int64
	durableSeq    atomic.Int64
	appliedMu     sync.Mutex
	appliedCh     chan struct{}
	// waitingReaders counts the reads waiting for the writer, and readerWaiting (buffered, 1)
	// wakes the writer when one starts; applyLinger is how long it gathers acknowledged batches
	// while none waits (see runWriter).
	waitingReaders atomic.Int32
	readerWaiting  chan struct{}
	applyLinger    time.Duration
	storedIDs      storedIDChunks // sqlStoredMsgIDs on the readers
	// keepIntake is set when the writer failed to apply an acknowledged message: from then on no
	// segment of the intake log is removed, so that the next start applies it.
	keepIntake atomic.Bool
	// wal makes commits durable (see walsync.go); nil with NoSync. acks carries committed batches
	// from the writer to the syncer goroutine, which fsyncs and then answers them. ckpt copies the
	// log into the database off the writer's path (checkpoint.go); nil with NoSync.
	wal       *walSync
	acks      chan committedBatch
	ckpt      *checkpointer
	sendMu    sync.RWMutex // held (read) while sending on reqs, (write) while closing it
	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
	count     atomic.Int64 // rows stored, kept by the writer after each commit
	// generation changes after every write that can change what a read returns (see Generation).
	generation atomic.Uint64
	// sparse steers Search's plan per venue (see search.go).
	sparse sparseVenues
	// orphanEdits counts stored edits whose root is not stored, and maxOkey is the greatest okey
	// stored (math.MinInt64 when none; see roots.go). Set by Open, then owned by the writer
	// goroutine.
	orphanEdits, maxOkey int64
	// recent is the greatest okey of each recent millisecond (recentkeys.go); writer goroutine.
	recent recentKeys
	// seqs lists each origin's recently committed seqs, for OriginSeqs (recentseqs.go).
	seqs *recentSeqs
	// scratch holds the writer's buffers between transactions (writer goroutine only).
	scratch writerScratch
	// scope is Options.Scope (see scope.go).
	scope Scope
	// taken, when set (tests only), runs in the intake goroutine after it has taken a batch and
	// before it logs it; applying runs in the writer before it applies a batch.
	taken, applying func()
}

// Open opens (creating when missing) the event store file at opts.Path, brings its schema up to
// date, applies what its intake log holds beyond the database, and starts the intake goroutine
// and the writer.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if err := validatePath(opts.Path); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(opts.Path)
	if err != nil {
		return nil, fmt.Errorf("eventstore: resolve path %q: %w", opts.Path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("eventstore: create directory for %q: %w", abs, err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	maxBatch := opts.MaxBatch
	if maxBatch <= 0 {
		maxBatch = DefaultMaxBatch
	}
	s := &Store{
		log:           logger.With("component", "eventstore", "path", abs),
		maxBatch:      maxBatch,
		applyMax:      maxBatch * applyBatchFactor,
		reqs:          make(chan *writeRequest, maxBatch),
		applyQ:        make(chan []*writeRequest, applyQueueBatches),
		writerDone:    make(chan struct{}),
		pendingIDs:    map[string]struct{}{},
		appliedCh:     make(chan struct{}),
		readerWaiting: make(chan struct{}, 1),
		applyLinger:   defaultApplyLinger,
		scope:         opts.Scope,
	}
	if err := makePrivate(abs); err != nil {
		return nil, err
	}
	if err := s.openDatabases(ctx, abs, opts.NoSync); err != nil {
		return nil, err
	}

	if err := s.recoverIntake(ctx, abs, opts.NoSync); err != nil {
		s.closeDatabases()
		return nil, err
	}
	if s.wal != nil {
		// Unbuffered: the writer commits batch n+1 while batch n syncs, and then waits for the
		// syncer, so that batches arriving meanwhile make one large transaction n+2 rather than
		// many small ones (each commit rewrites the pages it touched, and indexes a segment).
		s.acks = make(chan committedBatch)
	}
	go s.runIntake()
	go s.runWriter()
	s.log.Info("event store opened", "rows", s.count.Load(), "fsync", !opts.NoSync)
	return s, nil
}

func validatePath(path string) error {
	switch {
	case path == "":
		return fmt.Errorf("%w: empty Options.Path", ErrInvalidArgument)
	case path == ":memory:" || strings.HasPrefix(path, "file:"):
		return fmt.Errorf("%w: Options.Path %q must name a file", ErrInvalidArgument, path)
	}
	return nil
}

// dsn builds a driver DSN for the file at abs. The path travels as a file: URI so that characters
// such as '?' or '#' in it are escaped rather than parsed.
func dsn(abs string, params url.Values) string {
	u := url.URL{Scheme: "file", Path: abs, RawQuery: params.Encode()}
	return u.String()
}

func (s *Store) openDatabases(ctx context.Context, abs string, noSync bool) (err error) {
	// NORMAL: commits do not fsync; the store fsyncs the WAL itself before acknowledging them
	// (walsync.go).
	syncMode := "NORMAL"
	// The checkpointer (checkpoint.go) keeps the log copied into the database; the writer's own
	// checkpoints are for a log it never lets restart.
	autoCheckpoint := writerCheckpointPages
	if noSync {
		syncMode = "OFF"
		autoCheckpoint = 1000 // SQLite's default: no checkpointer without fsync
	}
	writeParams := url.Values{"_pragma": {
		"busy_timeout(10000)", "journal_mode(WAL)", "synchronous(" + syncMode + ")", "foreign_keys(OFF)",
		"temp_store(MEMORY)", // statement journals stay off the disk
		"wal_autocheckpoint(" + strconv.Itoa(autoCheckpoint) + ")",
	}, "_txlock": {"immediate"}}
	s.writeDB, err = sql.Open("sqlite", dsn(abs, writeParams))
	if err != nil {
		return fmt.Errorf("eventstore: open %q: %w", abs, err)
	}
	s.writeDB.SetMaxOpenConns(1)
	s.writeDB.SetMaxIdleConns(1)
	s.writeDB.SetConnMaxLifetime(0)
	s.writeDB.SetConnMaxIdleTime(0)
	defer func() {
		if err != nil {
			s.closeDatabases()
		}
	}()
	if err = migrate(ctx, s.writeDB); err != nil {
		return fmt.Errorf("eventstore: %q: %w", abs, err)
	}
	var rows int64
	if err = s.writeDB.QueryRowContext(ctx, `SELECT COUNT(*) FROM messages`).Scan(&rows); err != nil {
		return fmt.Errorf("eventstore: count rows: %w", err)
	}
	s.count.Store(rows)
	if err = s.writeDB.QueryRowContext(ctx, sqlCountOrphanEdits).Scan(&s.orphanEdits); err != nil {
		return fmt.Errorf("eventstore: count orphan edits: %w", err)
	}
	if err = s.writeDB.QueryRowContext(ctx, sqlMaxOkey, int64(math.MinInt64)).Scan(&s.maxOkey); err != nil {
		return fmt.Errorf("eventstore: read the newest order key: %w", err)
	}
	s.recent = newRecentKeys(s.maxOkey)
	var maxSeq int64
	if err = s.writeDB.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM messages`).Scan(&maxSeq); err != nil {
		return fmt.Errorf("eventstore: read the greatest seq: %w", err)
	}
	s.seqs = newRecentSeqs(maxSeq)
	if err = prepareAll(ctx, s.writeDB, slices.Concat(s.w.all(), s.rootChunks.all(), s.ftsChunks.all())); err != nil {
		return fmt.Errorf("eventstore: %w", err)
	}
	if !noSync {
		s.wal = newWALSync(abs)
		if err = s.wal.syncAll(); err != nil { // the migrations committed without an fsync
			return err
		}
		if s.ckpt, err = startCheckpointer(abs, s.log); err != nil {
			return err
		}
	}

	// Readers map the database file: in WAL mode a connection drops its whole page cache whenever
	// another connection has committed, so under a steady write load every read would otherwise
	// start cold and pay a pread and a page copy for each page it touches (B13: a tenth of a
	// search's CPU). Mapped pages cost neither; pages still in the WAL are read as before.
	readParams := url.Values{"_pragma": {"busy_timeout(10000)", "query_only(1)", "mmap_size(" + strconv.Itoa(readerMmapBytes) + ")"}}
	s.readDB, err = sql.Open("sqlite", dsn(abs, readParams))
	if err != nil {
		return fmt.Errorf("eventstore: open readers on %q: %w", abs, err)
	}
	readers := max(4, 2*runtime.GOMAXPROCS(0))
	s.readDB.SetMaxOpenConns(readers)
	s.readDB.SetMaxIdleConns(readers)
	s.readDB.SetConnMaxIdleTime(0)
	s.readDB.SetConnMaxLifetime(0)
	if err = prepareAll(ctx, s.readDB, append(s.r.all(), s.storedIDs.all()...)); err != nil {
		return fmt.Errorf("eventstore: %w", err)
	}
	return chmodPrivate(abs+"-wal", abs+"-shm") // created by the opening (filemode.go)
}

func (s *Store) closeDatabases() error {
	var errs []error
	errs = append(errs, closeAll(s.r.all()), closeAll(s.w.all()), closeAll(s.rootChunks.all()), closeAll(s.ftsChunks.all()),
		closeAll(s.storedIDs.all()))
	if s.readDB != nil {
		errs = append(errs, s.readDB.Close())
	}
	if s.ckpt != nil {
		errs = append(errs, s.ckpt.close())
	}
	if s.writeDB != nil {
		errs = append(errs, s.writeDB.Close())
	}
	if s.wal != nil {
		errs = append(errs, s.wal.close())
	}
	return errors.Join(errs...)
}

// Close stops the writer after the queued writes have committed and closes the database. Calls
// made after Close return ErrClosed. Close is idempotent; concurrent calls all wait for the first.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.sendMu.Lock()
		s.closed.Store(true)
		close(s.reqs)
		s.sendMu.Unlock()
		<-s.writerDone
		// Every acknowledged message is applied now; the log goes once the database holds them
		// durably.
		removeLog := s.intakeErr == nil && !s.keepIntake.Load() && s.durableSeq.Load() >= s.ackedSeq.Load()
		ierr := s.intake.close(removeLog)
		if err := errors.Join(s.closeDatabases(), ierr); err != nil {
			s.closeErr = fmt.Errorf("eventstore: close: %w", err)
			return
		}
		s.log.Info("event store closed")
	})
	return s.closeErr
}

// Count returns the number of stored rows: roots and edits, deleted or not.
func (s *Store) Count(ctx context.Context) (int64, error) {
	if err := s.checkOpen(ctx); err != nil {
		return 0, err
	}
	return s.count.Load(), nil
}

// checkOpenNoWait is checkOpen for the writes and reads of tables no message is in (cursors,
// channel events, dead letters): they need not wait for the writer to apply what the intake log
// acknowledged.
func (s *Store) checkOpenNoWait(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return ctx.Err()
}

func (s *Store) checkOpen(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.waitApplied(ctx)
}

// wrapReadErr maps errors of a read that raced with Close onto ErrClosed.
func (s *Store) wrapReadErr(op string, err error) error {
	if s.closed.Load() {
		return fmt.Errorf("eventstore: %s: %w", op, ErrClosed)
	}
	return fmt.Errorf("eventstore: %s: %w", op, err)
}
