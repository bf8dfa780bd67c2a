// Package transport owns the byte-level side of client connections: it turns
// a TCP, TLS or WebSocket connection into one line-oriented Conn, runs the
// accept loop with a per-client connection cap (an IPv4 address or an IPv6
// /64, IPLimiter; LimitListener applies the same cap to the HTTP listener),
// and bootstraps the TLS certificate the IRC listener serves.
//
// Following ergo, WebSocket is not hidden behind net.Conn: it is
// message-based, so each transport implements Conn directly. The IRC gateway
// reads and writes through Conn only and never sees the transport.
//
// An idle TCP connection holds no read or write buffer: its socket is read through its
// syscall.RawConn, waiting for input without a buffer (rawread_unix.go), and writes go through
// shared pooled buffers. A plain TCP connection can also be written without waiting
// (TryWriter: one write(2) through its RawConn that takes what the socket accepts), which lets
// a goroutine that serves many connections write to an idle one without being held up by it. Its goroutine, parked in that wait, keeps a call chain short enough for
// the runtime's smallest stack (benchmark B1). WebSocket connections are served by
// github.com/coder/websocket (nhooyr.io/websocket under its maintained path). AcceptWebSocket
// hands the library the hijacked connection wrapped (wssocket.go) with 16-byte bufio buffers:
// input and output are buffered beneath them only while in flight, no read goes past the end of
// the frame being read, so an idle connection's reader waits for input on the raw socket as on
// TCP, and reads each message on a short-lived goroutine. A close the server starts is one Close
// frame each way (RFC 6455 §5.5.1): the library does not answer the client's echo with a
// second Close, which browsers report as "Close received after close" and an abnormal 1006.
//
// Line framing for streams is hand-written on top of bufio.Reader.ReadSlice
// rather than bufio.Scanner because the IRC rule for an over-long line (reply
// 417, drop the line, keep the connection) needs the reader to skip to the
// next LF and carry on, which Scanner cannot do after ErrTooLong.
package transport
