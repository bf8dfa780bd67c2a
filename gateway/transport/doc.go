// Package transport owns the byte-level side of client connections: it turns
// a TCP, TLS or WebSocket connection into one line-oriented Conn, runs the
// accept loop with a per-IP connection cap, and bootstraps the TLS
// certificate the IRC listener serves.
//
// Following ergo, WebSocket is not hidden behind net.Conn: it is
// message-based, so each transport implements Conn directly. The IRC gateway
// reads and writes through Conn only and never sees the transport.
//
// Line framing for streams is hand-written on top of bufio.Reader.ReadSlice
// rather than bufio.Scanner because the IRC rule for an over-long line (reply
// 417, drop the line, keep the connection) needs the reader to skip to the
// next LF and carry on, which Scanner cannot do after ErrTooLong.
package transport
