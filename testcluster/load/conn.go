package load

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// Transport names how a scenario reaches the server.
type Transport string

// The transports a scenario can use.
const (
	TransportTCP       Transport = "tcp" // plain IRC over TCP (Target.IRCAddr)
	TransportWebSocket Transport = "ws"  // IRC over WebSocket, one line per message (Target.WSURL)
)

// ParseTransport accepts "tcp" and "ws" (or "websocket").
func ParseTransport(s string) (Transport, error) {
	switch strings.ToLower(s) {
	case "tcp":
		return TransportTCP, nil
	case "ws", "websocket":
		return TransportWebSocket, nil
	}
	return "", fmt.Errorf("load: unknown transport %q (want tcp or ws)", s)
}

// Target is the server under test and how to reach it.
type Target struct {
	IRCAddr   string    // host:port of plain IRC, for TransportTCP
	WSURL     string    // ws:// URL of IRC over WebSocket, for TransportWebSocket
	HTTPURL   string    // http:// base URL of the REST API, for the HTTP scenarios (B7)
	Transport Transport // default TransportTCP
	// SourceAddrs are local addresses to connect from, used in turn, so
	// that more connections than one address has ephemeral ports can be
	// open at once (127.0.0.2 and up are loopback addresses on Linux).
	// Empty lets the kernel choose.
	SourceAddrs []netip.Addr
}

// ParseSourceAddrs parses a comma-separated list of IP addresses.
func ParseSourceAddrs(list string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("load: source address: %w", err)
		}
		out = append(out, a)
	}
	return out, nil
}

// wsReadLimit bounds one received WebSocket message.
const wsReadLimit = 64 << 10

// readBufferSize is the read buffer of one TCP connection. Registration and
// channel replies fit easily; a longer line is assembled in a side buffer.
const readBufferSize = 4 << 10

// dialer opens connections to a Target, spreading them over the source
// addresses.
type dialer struct {
	target Target
	tcp    []*net.Dialer
	ws     []*http.Client
	next   atomic.Uint64
}

func newDialer(t Target) (*dialer, error) {
	if t.Transport == "" {
		t.Transport = TransportTCP
	}
	switch t.Transport {
	case TransportTCP:
		if t.IRCAddr == "" {
			return nil, errors.New("load: the TCP transport needs an IRC address")
		}
	case TransportWebSocket:
		if t.WSURL == "" {
			return nil, errors.New("load: the WebSocket transport needs a ws:// URL")
		}
	default:
		return nil, fmt.Errorf("load: unknown transport %q", t.Transport)
	}
	d := &dialer{target: t}
	sources := t.SourceAddrs
	if len(sources) == 0 {
		sources = []netip.Addr{{}}
	}
	for _, src := range sources {
		nd := &net.Dialer{}
		if src.IsValid() {
			nd.LocalAddr = &net.TCPAddr{IP: src.AsSlice()}
		}
		d.tcp = append(d.tcp, nd)
		// One HTTP client per source address; the WebSocket takes the
		// connection over, so nothing is pooled.
		d.ws = append(d.ws, &http.Client{Transport: &http.Transport{
			DialContext:       nd.DialContext,
			DisableKeepAlives: true,
			ForceAttemptHTTP2: false,
		}})
	}
	return d, nil
}

func (d *dialer) dial(ctx context.Context) (lineConn, error) {
	i := int(d.next.Add(1)-1) % len(d.tcp)
	if d.target.Transport == TransportWebSocket {
		ws, _, err := websocket.Dial(ctx, d.target.WSURL, &websocket.DialOptions{HTTPClient: d.ws[i]})
		if err != nil {
			return nil, fmt.Errorf("load: dial %s: %w", d.target.WSURL, err)
		}
		ws.SetReadLimit(wsReadLimit)
		return &wsLineConn{ws: ws}, nil
	}
	conn, err := d.tcp[i].DialContext(ctx, "tcp", d.target.IRCAddr)
	if err != nil {
		return nil, fmt.Errorf("load: dial %s: %w", d.target.IRCAddr, err)
	}
	return &tcpLineConn{conn: conn, r: bufio.NewReaderSize(conn, readBufferSize)}, nil
}

// lineConn moves IRC lines. One goroutine reads; writes may come from
// another.
type lineConn interface {
	// readLine returns the next line without its line ending; lines
	// longer than ircmsg.MaxLineBytes are skipped. A TCP read honours
	// ctx's deadline but not a cancellation without one: close the
	// connection to interrupt it. An orderly close reads as io.EOF.
	readLine(ctx context.Context) (string, error)
	// writeLines sends lines (without CRLF): one write on TCP, one
	// message per line on WebSocket.
	writeLines(ctx context.Context, lines ...string) error
	// close closes the connection at once.
	close() error
}

type tcpLineConn struct {
	conn     net.Conn
	r        *bufio.Reader
	deadline time.Time // the read deadline last set

	// A line longer than the read buffer is assembled in long; one over
	// ircmsg.MaxLineBytes is dropped (tooLong) up to its end.
	long    []byte
	inLong  bool
	tooLong bool
}

func (c *tcpLineConn) readLine(ctx context.Context) (string, error) {
	if dl, _ := ctx.Deadline(); !dl.Equal(c.deadline) {
		if err := c.conn.SetReadDeadline(dl); err != nil {
			return "", normalizeReadError(err)
		}
		c.deadline = dl
	}
	for {
		chunk, err := c.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			c.appendLong(chunk)
			continue
		}
		if err != nil {
			return "", normalizeReadError(err)
		}
		if c.inLong {
			c.appendLong(chunk)
			tooLong := c.tooLong
			chunk = c.long
			c.long, c.inLong, c.tooLong = nil, false, false
			if tooLong {
				continue
			}
		}
		if line := trimLineEnding(string(chunk)); line != "" {
			return line, nil
		}
	}
}

func (c *tcpLineConn) appendLong(chunk []byte) {
	c.inLong = true
	if c.tooLong {
		return
	}
	if len(c.long)+len(chunk) > ircmsg.MaxLineBytes {
		c.tooLong, c.long = true, nil
		return
	}
	c.long = append(c.long, chunk...)
}

func (c *tcpLineConn) writeLines(ctx context.Context, lines ...string) error {
	n := 0
	for _, l := range lines {
		n += len(l) + 2
	}
	buf := make([]byte, 0, n)
	for _, l := range lines {
		buf = append(append(buf, l...), '\r', '\n')
	}
	dl, _ := ctx.Deadline()
	if err := c.conn.SetWriteDeadline(dl); err != nil {
		return fmt.Errorf("load: write: %w", err)
	}
	if _, err := c.conn.Write(buf); err != nil {
		return fmt.Errorf("load: write: %w", err)
	}
	return nil
}

func (c *tcpLineConn) close() error { return c.conn.Close() }

type wsLineConn struct {
	ws     *websocket.Conn
	queued []string // further lines of a message holding several
}

func (c *wsLineConn) readLine(ctx context.Context) (string, error) {
	for len(c.queued) == 0 {
		_, data, err := c.ws.Read(ctx)
		if err != nil {
			return "", normalizeReadError(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if line = trimLineEnding(line); line != "" && len(line) <= ircmsg.MaxLineBytes {
				c.queued = append(c.queued, line)
			}
		}
	}
	line := c.queued[0]
	c.queued = c.queued[1:]
	return line, nil
}

func (c *wsLineConn) writeLines(ctx context.Context, lines ...string) error {
	for _, l := range lines {
		if err := c.ws.Write(ctx, websocket.MessageText, []byte(l)); err != nil {
			return fmt.Errorf("load: write: %w", err)
		}
	}
	return nil
}

// close ends the connection without the closing handshake, which would
// wait for the server; the server has usually closed it already.
func (c *wsLineConn) close() error { return c.ws.CloseNow() }

func trimLineEnding(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return strings.TrimSuffix(s, "\r")
}

// normalizeReadError reports an orderly close by either side as io.EOF.
func normalizeReadError(err error) error {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return io.EOF
	case websocket.CloseStatus(err) != -1:
		return io.EOF
	}
	return fmt.Errorf("load: read: %w", err)
}
