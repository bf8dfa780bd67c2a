// Package load owns the load generator behind `palaver bench`: the
// benchmark scenarios of the design's table (B1 idle memory, B2 login
// storm, B3/B4/B11 PRIVMSG flows at a rising rate (flow.go, fanout.go),
// B5 join storm, B6 signed messages, B7 verify requests, B12/B13 history
// and search over HTTP, and on a cluster B8–B10 replicated changes and the
// leader kill, B14 delivery across a node restart and B15 cross-node
// messages),
// the measurements they take (server resident memory and CPU from /proc,
// the load client's own CPU time, latency percentiles), the summary of
// repeated runs (median and min–max spread) and the table and JSON
// reports. It also starts the servers it measures: one `palaver serve`
// (spawn.go) or a cluster of them on loopback (clusterspawn.go), and reads
// each node's Raft role and term from /api/v1/health.
//
// It is test tooling and lives under testcluster, beside the harness, not
// under gateway/ with the server edges; no server package imports it outside
// tests.
//
// The scenarios do not use ircclient.Client for their connections: that
// client starts a reader goroutine per connection, keeps a 16 KiB read
// buffer, a 256-line queue and a history of every message, which is right
// for tests but would make the load client eat the CPU and memory it is
// meant to measure in the server (both share one small machine). Instead a
// lean line connection (conn.go) reads with a small buffer on the calling
// goroutine and writes each batch of lines with one system call; WebSocket
// connections use github.com/coder/websocket directly, one IRC line per message.
// Signing reuses ircclient's did:key signers, so the SASL response is the
// one the client package produces.
//
// Everything that talks to a server speaks plain IRC (NICK/USER, JOIN,
// PING/PONG), except the login storm and the signing senders, which need
// SASL ATPROTO-CHALLENGE and MSGSIG, so the plain scenarios can measure
// any IRC server side by side. A signing sender works as a real client
// does: it registers a fresh session key and, during the run, mints each
// message's msgid, builds its canonical document and signs it
// (federation/signing), so the client's CPU share includes the signing.
// B7's HTTP requests use net/http: the verify responses are JSON of a
// few KB, possibly chunked, and a hand-written HTTP client would gain
// little; the client's CPU is reported next to the throughput.
//
// The cluster scenarios speak plain IRC too. Every change a B8–B10 writer
// makes carries its own key (the topic text's first word, the ban mask,
// the pinned msgid), by which its echo and its sighting on another node
// are matched; the loss check ends each writer's run with a closing topic
// (see RunClusterChanges). B15's message texts carry their sequence
// number, by which a receiver finds the send time.
package load
