package eventstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// migrations is the schema ladder. Entry i brings the schema to version i+1. Append new entries;
// never edit, reorder or remove an applied one.
var migrations = [...]string{
	// 1: messages, their indexes, and the search index. A root has no replaces_msgid; an edit has
	// no okey (the order key of a root, see orderkey.go).
	`CREATE TABLE messages (
		seq            INTEGER PRIMARY KEY AUTOINCREMENT,
		msgid          TEXT    NOT NULL UNIQUE,
		okey           INTEGER UNIQUE,
		venue          TEXT    NOT NULL,
		command        TEXT    NOT NULL,
		sender         TEXT    NOT NULL,
		sender_nick    TEXT    NOT NULL,
		sender_did     TEXT    NOT NULL,
		text           TEXT    NOT NULL,
		tags_json      TEXT    NOT NULL,
		time_ms        INTEGER NOT NULL,
		replaces_msgid TEXT,
		origin         TEXT    NOT NULL,
		deleted_at_ms  INTEGER,
		rev_msgid      TEXT,
		rev_text       TEXT,
		rev_tags_json  TEXT,
		rev_time_ms    INTEGER,
		rev_seq        INTEGER,
		CHECK (okey IS NULL OR okey >> 20 = time_ms) -- 20 = tieBits: an okey stays in its millisecond
	);
	CREATE INDEX messages_live_by_okey ON messages(venue, okey)
		WHERE replaces_msgid IS NULL AND deleted_at_ms IS NULL;
	CREATE INDEX messages_live_by_seq ON messages(venue, seq)
		WHERE replaces_msgid IS NULL AND deleted_at_ms IS NULL;
	CREATE INDEX messages_edits ON messages(replaces_msgid, time_ms, seq)
		WHERE replaces_msgid IS NOT NULL;
	CREATE VIRTUAL TABLE messages_fts USING fts5(
		venue, body, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2'
	);`,
	// 2: the event exchange between nodes. Each node's own rows, read in seq order, are its outbox;
	// peer_cursors holds, per origin, the last origin seq this node stored from it (catch-up).
	`CREATE INDEX messages_by_origin ON messages(origin, seq);
	CREATE TABLE peer_cursors (
		origin TEXT PRIMARY KEY,
		seq    INTEGER NOT NULL
	);`,
	// 3: reactions, filed by the root they react to; a reactor is a DID, or "nick:<nick>" for a guest.
	`CREATE TABLE reactions (
		root_msgid   TEXT    NOT NULL,
		reactor      TEXT    NOT NULL,
		emoji        TEXT    NOT NULL,
		reactor_nick TEXT    NOT NULL,
		time_ms      INTEGER NOT NULL,
		PRIMARY KEY (root_msgid, reactor, emoji)
	) WITHOUT ROWID;`,
	// 4: deletes travel between nodes as a log of their own: each node files the deletes made on
	// it, in order, and the exchange copies them like messages (cursor key "del:<origin>").
	`CREATE TABLE deletions (
		seq        INTEGER PRIMARY KEY AUTOINCREMENT,
		root_msgid TEXT    NOT NULL,
		at_ms      INTEGER NOT NULL,
		origin     TEXT    NOT NULL,
		venue      TEXT    NOT NULL,
		sender     TEXT    NOT NULL,
		sender_did TEXT    NOT NULL,
		tags_json  TEXT    NOT NULL
	);
	CREATE INDEX deletions_by_origin ON deletions(origin, seq);`,
	// 5: reactions travel between nodes as a log of react and unreact events (the TAGMSG each
	// came as), filed by every node for the events made on it and for those it copied from
	// others (cursor key "react:<origin>"). The newest event of a (root, reactor, emoji), by
	// (time_ms, event_msgid), decides whether the reaction stands, so nodes that receive them in
	// different orders agree.
	`CREATE TABLE reaction_log (
		seq          INTEGER PRIMARY KEY AUTOINCREMENT,
		event_msgid  TEXT    NOT NULL UNIQUE,
		origin       TEXT    NOT NULL,
		root_msgid   TEXT    NOT NULL,
		reactor      TEXT    NOT NULL,
		reactor_nick TEXT    NOT NULL,
		emoji        TEXT    NOT NULL,
		removed      INTEGER NOT NULL,
		time_ms      INTEGER NOT NULL,
		venue        TEXT    NOT NULL,
		sender       TEXT    NOT NULL,
		sender_did   TEXT    NOT NULL,
		tags_json    TEXT    NOT NULL
	);
	CREATE INDEX reaction_log_by_origin ON reaction_log(origin, seq);
	CREATE INDEX reaction_log_by_key ON reaction_log(root_msgid, reactor, emoji, time_ms, event_msgid);`,
	// 6: the incarnation of the channel a message was written in, and whether the channel was
	// public then (see "Channel incarnations" in doc.go). Rows stored before have incarnation ''
	// and count as restricted: only a channel that has existed since before this migration (whose
	// incarnation is '' too) serves them.
	`ALTER TABLE messages ADD COLUMN incarnation TEXT NOT NULL DEFAULT '';
	ALTER TABLE messages ADD COLUMN public INTEGER NOT NULL DEFAULT 0;`,
	// 7: channel events for event playback (channelevents.go): state changes filed from the
	// applied Raft log, the same rows on every node, read by CHATHISTORY only.
	`CREATE TABLE channel_events (
		venue       TEXT    NOT NULL,
		msgid       TEXT    NOT NULL,
		time_ms     INTEGER NOT NULL,
		log_index   INTEGER NOT NULL,
		command     TEXT    NOT NULL,
		source      TEXT    NOT NULL,
		account     TEXT    NOT NULL,
		params_json TEXT    NOT NULL,
		PRIMARY KEY (venue, msgid)
	) WITHOUT ROWID;
	CREATE INDEX channel_events_by_time ON channel_events(venue, time_ms, msgid);`,
	// 8: dead letters (deadletters.go): items a peer sent that this node could not accept, each
	// recorded once with the reason, so that the cursor over the peer's log moves past them.
	`CREATE TABLE dead_letters (
		id      INTEGER PRIMARY KEY AUTOINCREMENT,
		peer    TEXT    NOT NULL,
		origin  TEXT    NOT NULL,
		log     TEXT    NOT NULL,
		seq     INTEGER NOT NULL,
		msgid   TEXT    NOT NULL,
		reason  TEXT    NOT NULL,
		detail  TEXT    NOT NULL,
		time_ms INTEGER NOT NULL,
		UNIQUE (peer, origin, log, seq, msgid)
	);
	CREATE INDEX dead_letters_by_peer ON dead_letters(peer, id);`,
	// 9: where a reader who resumes after a message starts (resume.go): the lowest seq of its
	// venue that was not yet delivered on this node when the message was stored. NULL: the
	// message's own seq + 1 (rows stored before, and rows not written by the chat service).
	`ALTER TABLE messages ADD COLUMN resume_from INTEGER;`,
	// 10: channel events in log order, for a node that fills in the events of entries it never
	// applied itself (EventsThrough, answered to a peer that joined later or installed a snapshot).
	`CREATE INDEX channel_events_by_index ON channel_events(log_index, venue, msgid);`,
}

// migrate applies the migrations the database has not seen yet, each in its own transaction, and
// records them in schema_migrations.
func migrate(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version       INTEGER PRIMARY KEY,
		applied_at_ms INTEGER NOT NULL
	)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	var current int
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if current > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this build knows (%d)", current, len(migrations))
	}
	for v := current + 1; v <= len(migrations); v++ {
		if err := applyMigration(ctx, db, v); err != nil {
			return err
		}
	}
	return nil
}

func applyMigration(ctx context.Context, db *sql.DB, version int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migration %d: begin: %w", version, err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit this is a no-op
	if _, err := tx.ExecContext(ctx, migrations[version-1]); err != nil {
		return fmt.Errorf("migration %d: %w", version, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations(version, applied_at_ms) VALUES (?, ?)`,
		version, time.Now().UnixMilli()); err != nil {
		return fmt.Errorf("migration %d: record: %w", version, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migration %d: commit: %w", version, err)
	}
	return nil
}
