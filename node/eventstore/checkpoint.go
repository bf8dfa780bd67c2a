package eventstore

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/url"
	"sync/atomic"
	"time"
)

// Checkpoints off the writer's path.
//
// A WAL checkpoint copies the pages the log holds into the database file and fsyncs the log before
// and the database after. SQLite runs one by default in the connection that commits, right after
// the commit that takes the log past 1,000 pages: the group-commit writer then spent a few
// milliseconds (a page copy per distinct page and two fsyncs) with every caller queued behind it,
// several times a second under load (B11: the writer's own fsyncs waited 1.7 ms on average and
// 6.5 ms at the p99, ~30 times a second at 8,000 messages/s).
//
// The store therefore checkpoints on a connection of its own: the writer nudges the checkpointer
// after each commit, and the checkpointer runs a PASSIVE checkpoint (it never blocks the writer or
// a reader), then waits checkpointPause before it looks again, so that one checkpoint copies a
// page rewritten by many commits once (a busy venue's index tail is rewritten by nearly every
// commit). The writer's connection keeps SQLite's own checkpoint for a log that has grown past
// writerCheckpointPages without being restarted: the log starts over from its beginning only when
// a transaction begins after a checkpoint has copied all of it, which a writer that is never
// idle does not give the checkpointer the chance to achieve; the writer then copies what is left
// (little: the checkpointer has copied the rest) and the log restarts.
//
// Durability does not change: an acknowledgement still waits for an fsync (the intake log's for an
// append, the store's own of the database's log for a delete or a direct write; walsync.go), and
// a checkpoint copies only committed frames, syncing the log first, as SQLite's own checkpoints do.
const (
	checkpointPause       = 50 * time.Millisecond
	writerCheckpointPages = 16384
)

// checkpointer runs the store's checkpoints on its own connection.
type checkpointer struct {
	db   *sql.DB
	wake chan struct{} // buffered (1): the writer never waits to nudge
	stop chan struct{}
	done chan struct{}
	// checkpointed, when set (tests only), is called after each checkpoint with its outcome.
	checkpointed atomic.Pointer[func(error)]
}

// startCheckpointer opens the checkpoint connection on the database at abs (its synchronous=NORMAL
// makes its checkpoints sync the log before copying and the database after) and starts the
// checkpointer.
func startCheckpointer(abs string, log *slog.Logger) (*checkpointer, error) {
	params := url.Values{"_pragma": {"busy_timeout(10000)", "synchronous(NORMAL)"}}
	db, err := sql.Open("sqlite", dsn(abs, params))
	if err != nil {
		return nil, fmt.Errorf("eventstore: open the checkpoint connection: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	c := &checkpointer{db: db, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go c.run(log)
	return c, nil
}

// nudge tells the checkpointer that a commit has added to the log.
func (c *checkpointer) nudge() {
	if c == nil {
		return // NoSync, or a commit of the migrations before the checkpointer starts
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *checkpointer) run(log *slog.Logger) {
	defer close(c.done)
	pause := time.NewTimer(checkpointPause)
	pause.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-c.wake:
		}
		err := c.checkpoint()
		if err != nil {
			log.Warn("checkpoint failed; the writer's own checkpoints remain", "err", err)
		}
		if f := c.checkpointed.Load(); f != nil {
			(*f)(err)
		}
		pause.Reset(checkpointPause)
		select {
		case <-c.stop:
			pause.Stop()
			return
		case <-pause.C:
		}
	}
}

// checkpoint copies every committed page it can into the database file without waiting for the
// writer or the readers.
func (c *checkpointer) checkpoint() error {
	var busy, logFrames, copied int64
	if err := c.db.QueryRowContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &logFrames, &copied); err != nil {
		return fmt.Errorf("eventstore: checkpoint: %w", err)
	}
	return nil
}

// close stops the checkpointer (a checkpoint under way completes first) and closes its connection.
func (c *checkpointer) close() error {
	close(c.stop)
	<-c.done
	return c.db.Close()
}
