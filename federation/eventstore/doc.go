// Package eventstore owns a node's durable copy of chat events: messages, their edits and their soft
// deletes, each stored once by msgid, with the history views (CHATHISTORY, REST paging, export) and
// the full-text search that the gateways serve from it.
//
// Chat messages never go through Raft. A node writes each message here, durably, before it is
// echoed or acknowledged; Append returns only after the transaction holding the message has
// committed and been fsynced.
//
// # Why SQLite through modernc.org/sqlite
//
//   - Durable writes: WAL mode with synchronous=FULL fsyncs the log on every commit, so a returned
//     Append survives a crash or power loss. One writer goroutine batches concurrent Append calls
//     into one transaction (group commit), so one fsync covers many messages.
//   - Full-text search: FTS5 is compiled into the driver; no second index engine to keep in sync.
//   - Fast paging: every view is one range scan over a partial index on (venue, time_ms, seq) that
//     holds only live roots, so deleted rows and edit rows cost nothing at read time.
//   - No cgo: the driver is SQLite transpiled to Go, so the binary stays static and cross-compiles.
//
// # Data model
//
// Every stored event is one row of the messages table, keyed by seq (INTEGER PRIMARY KEY
// AUTOINCREMENT, never reused, so later outbox rows can reference it) and unique by msgid. A root
// is a row whose replaces_msgid is NULL; an edit is a row whose replaces_msgid names its root (an
// edit that names another edit is re-pointed at that edit's root when stored). The root row also
// carries its current revision (rev_* columns: the edit with the greatest (time_ms, seq)), so views
// read one row per message. Edits that arrive before their root (federation does not guarantee
// order) are linked when the root arrives. Deletes are soft: deleted_at_ms is set on the root and
// on every revision, and the root leaves the partial indexes and the search index.
//
// Ordering is by (time_ms, seq) everywhere: time is the server time of the root in milliseconds,
// and seq breaks ties in arrival order. Edits keep the root's place.
//
// # Search
//
// messages_fts is a contentless FTS5 table (contentless_delete=1) whose rowid is the root's seq and
// whose text is the root's current revision. It is maintained explicitly inside the same
// transaction as the write it reflects: a root is indexed when stored, re-indexed when a newer
// revision arrives, and removed when deleted. Queries are sanitized (see ftsQuery): every
// whitespace-separated term is matched literally as a phrase, and the terms are ANDed.
//
// # Paging by unix seconds
//
// PageBeforeUnix keeps freeq's REST semantics: a strict "<" on whole seconds. A client that pages
// with the oldest timestamp it holds skips the messages of that second that did not fit on its
// page. This is inherent to a seconds cursor; Before with a msgid Bound is the exact walk.
package eventstore
