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
// How it works, and why it is built this way: DESIGN.md beside this file.
package load
