// Package eventstore owns a node's durable copy of chat events: messages, their edits and their soft
// deletes, each stored once by msgid, with the history views (CHATHISTORY, REST paging, export) and
// the full-text search that the gateways serve from it.
//
// Chat messages never go through Raft. A node writes each message here, durably, before it is
// echoed or acknowledged: Append returns only after the transaction holding the message has
// committed and been fsynced.
//
// # Why SQLite through modernc.org/sqlite
//
//   - Durable writes: in WAL mode every transaction is appended to one log file, and the store
//     fsyncs that file before it answers, so a returned Append survives a crash or a power loss.
//     One writer goroutine batches concurrent Append calls into one transaction (group commit;
//     while several callers are writing, a small batch waits up to a millisecond for company, so
//     that a moderate rate from many connections does not pay one commit per message), storing
//     runs of new roots with multi-row INSERTs (roots.go), and a syncer goroutine fsyncs the log
//     once for every batch committed meanwhile, so the
//     writer commits batch n+1 while batch n syncs (see walsync.go for why synchronous=NORMAL plus
//     the store's own fsync is as durable as synchronous=FULL).
//   - Full-text search: FTS5 is compiled into the driver; no second engine to keep in step.
//   - Fast paging: every view is one walk of a partial index that holds only live roots, so
//     deleted rows and edit rows cost nothing at read time.
//   - No cgo: the driver is SQLite translated to Go, so the binary stays static and cross-compiles.
//
// Readers use a pool of query_only connections; WAL lets them read while the writer commits.
//
// # Data model
//
// Every stored event is one row of the messages table, keyed by seq (INTEGER PRIMARY KEY
// AUTOINCREMENT: never reused, in arrival order, so later outbox rows can reference it) and unique
// by msgid. A root is a row whose replaces_msgid is NULL; an edit is a row whose replaces_msgid
// names its root (an edit naming another edit is re-pointed at that edit's root when stored). A
// root also carries its current revision (rev_* columns: the edit with the greatest (time, seq)),
// so a view reads one row per message. Edits that arrive before their root (federation does not
// promise order) are linked when the root arrives. Deletes are soft: deleted_at_ms is set on the
// root and on every revision, and the root leaves the partial indexes and the search index.
//
// Channel events (channelevents.go) are not messages: the JOIN, PART, MODE ... lines a node files
// from its applied Raft log for IRC event playback live in a table of their own, which only
// CHATHISTORY reads; no message view, search, export or exchange sees them.
//
// Ordering is by (time_ms, seq) everywhere, where time is the root's server time in milliseconds
// and seq breaks ties. The store materializes that order in one integer per root, okey (see
// orderkey.go), which both the views and the search index walk. Two reads follow seq instead:
// export (ExportAfter) and resuming after a message (ResumeAfter, resume.go), which starts at the
// row's resume_from, the oldest row of its venue not yet delivered on this node when it was
// stored (stamped by the chat service), so that a reader catching up after the last message it
// read also gets one that reached this node earlier but was delivered after it.
//
// # Search
//
// messages_fts is a contentless FTS5 table (contentless_delete=1) with two columns: a token naming
// the venue and the root's current text. Its rowid is -okey, so FTS5 yields matches newest first
// while walking its doclists forwards (the direction in which it can skip through them), and a
// query stops after limit hits however many messages match. The index is maintained in the same
// transaction as the write it reflects: roots are indexed when stored, re-indexed when a newer
// revision arrives, and removed when deleted. User queries are sanitized by ftsQuery: every
// whitespace-separated term is matched literally as a phrase, and the terms are ANDed. Search
// picks its plan per venue: in a venue holding most of the matches it walks the terms' matches of
// every venue and keeps the venue's; in a sparse one it intersects the terms with the venue's token
// (see Search).
//
// # Channel incarnations
//
// A channel's name outlives the channel: when the last member of an unowned channel leaves, the
// channel is deleted, and whoever joins the name next creates a new one. Its history must not hand
// the new channel what the old one kept private. Every channel therefore has an incarnation (an
// id the state machine gives it when it is created, fsm.Channel.Incarnation), and every message of
// a channel venue is stamped, when it is first stored, with the incarnation it was written in and
// whether the channel was public (discoverable: no +i, +k or +E) then. The node's Options.Scope
// tells the store what a venue's channel is now, and every view of a channel venue (the history
// walks, the REST pages, export, search) serves only:
//
//   - the messages of the channel's current incarnation, and
//   - the messages of earlier incarnations that were public when written.
//
// So a restricted channel's history is private to that channel for good; a venue whose channel
// does not exist serves its public messages only. Reads by msgid (Get, Root, Current) return raw
// rows: callers that serve them check Visible. A message copied from another node keeps the stamp
// it was given where it was first stored. Rows stored before incarnations existed carry the
// incarnation "" and count as restricted: the channels that existed then (incarnation "" too)
// still serve them, a channel created after the upgrade does not.
//
// # Paging by unix seconds
//
// PageBeforeUnix keeps freeq's REST semantics: a strict "<" on whole seconds. A client that pages
// with the oldest timestamp it holds skips the messages of that second that did not fit on its
// page; that is inherent to a seconds cursor. Before with a msgid Bound is the exact walk.
//
// # Not done here
//
// Authorship and venue checks for edits and deletes belong to the callers (Root gives them the root
// row). There is no retention (count or age based) yet, and no per-peer outbox tables.
package eventstore
