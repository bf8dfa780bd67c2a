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

// Group-commit lingering (see runWriter). A commit of a few messages costs ~0.3–0.5 ms of the
// writer's CPU on the project's machine, almost all of it per commit rather than per message; one
// millisecond at most is a tenth of the acknowledgement budget (B11: p99 ≤ 10 ms).
const (
	defaultCommitDelay  = time.Millisecond
	lingerBelowMessages = 64
)

// Store is a node's event store. It is safe for concurrent use.
type Store struct {
	log      *slog.Logger
	maxBatch int
	// commitDelay is how long the writer lingers for more requests before committing a small batch
	// while several callers are writing, and lingerBelow is the batch size (in messages) that
	// stops the lingering (see runWriter).
	commitDelay time.Duration
	lingerBelow int

	writeDB    *sql.DB // one connection: the writer goroutine, migrations, and the direct writes of reactions and cursors
	readDB     *sql.DB // a pool of query_only connections
	w          writeStatements
	rootChunks rootChunkStatements // the writer's multi-row root inserts (roots.go)
	r          readStatements

	reqs       chan *writeRequest // group-commit queue; closed by Close
	writerDone chan struct{}      // closed once the writer and the syncer have answered every request
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
	// taken, when set (tests only), runs in the writer after it has taken a batch and before it
	// commits it.
	taken func()
}

// Open opens (creating when missing) the event store file at opts.Path, brings its schema up to
// date and starts the group-commit writer.
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
		log:         logger.With("component", "eventstore", "path", abs),
		maxBatch:    maxBatch,
		commitDelay: defaultCommitDelay,
		lingerBelow: min(lingerBelowMessages, maxBatch),
		reqs:        make(chan *writeRequest, maxBatch),
		writerDone:  make(chan struct{}),
		scope:       opts.Scope,
	}
	if err := makePrivate(abs); err != nil {
		return nil, err
	}
	if err := s.openDatabases(ctx, abs, opts.NoSync); err != nil {
		return nil, err
	}

	if s.wal != nil {
		// Unbuffered: the writer commits batch n+1 while batch n syncs, and then waits for the
		// syncer, so that requests arriving meanwhile make one large batch n+2 rather than many
		// small ones (each commit rewrites the pages it touched, and indexes a segment).
		s.acks = make(chan committedBatch)
	}
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
	if err = prepareAll(ctx, s.writeDB, append(s.w.all(), s.rootChunks.all()...)); err != nil {
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
	if err = prepareAll(ctx, s.readDB, s.r.all()); err != nil {
		return fmt.Errorf("eventstore: %w", err)
	}
	return chmodPrivate(abs+"-wal", abs+"-shm") // created by the opening (filemode.go)
}

func (s *Store) closeDatabases() error {
	var errs []error
	errs = append(errs, closeAll(s.r.all()), closeAll(s.w.all()), closeAll(s.rootChunks.all()))
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
		if err := s.closeDatabases(); err != nil {
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

func (s *Store) checkOpen(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return ctx.Err()
}

// wrapReadErr maps errors of a read that raced with Close onto ErrClosed.
func (s *Store) wrapReadErr(op string, err error) error {
	if s.closed.Load() {
		return fmt.Errorf("eventstore: %s: %w", op, ErrClosed)
	}
	return fmt.Errorf("eventstore: %s: %w", op, err)
}
