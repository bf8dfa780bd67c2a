package ircclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"

	"github.com/coder/websocket"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
)

// seenLimit is how many received messages Seen keeps.
const seenLimit = 10_000

// readQueue is how many received lines may wait for ReadMessage.
const readQueue = 256

// Client is one IRC connection. One goroutine may read (ReadMessage, Expect
// and the helpers built on them) while others call Send; Seen and Close are
// safe from any goroutine.
type Client struct {
	tr transport

	lines      chan readResult // fed by the reader goroutine, closed when it stops
	readErr    error           // why lines was closed; written before close(lines)
	done       chan struct{}   // closed by Close
	readerDone chan struct{}
	closeOnce  sync.Once
	closeErr   error

	writeMu sync.Mutex // serializes whole lines on the transport

	seenMu    sync.Mutex
	seen      []ircmsg.Message // ring buffer, oldest at seenStart once full
	seenStart int
	seenLimit int
}

type readResult struct {
	line string
	err  error
}

// Dial connects over plain TCP.
func Dial(ctx context.Context, addr string) (*Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ircclient: dial %s: %w", addr, err)
	}
	return newClient(newStreamTransport(conn)), nil
}

// DialTLS connects over TLS. A nil cfg uses the defaults, with the server
// name taken from addr.
func DialTLS(ctx context.Context, addr string, cfg *tls.Config) (*Client, error) {
	d := tls.Dialer{Config: cfg}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ircclient: dial tls %s: %w", addr, err)
	}
	return newClient(newStreamTransport(conn)), nil
}

// DialWebSocket connects to a ws:// or wss:// URL (the server's /irc
// endpoint). Each IRC line travels as one text frame without CRLF.
func DialWebSocket(ctx context.Context, url string) (*Client, error) {
	conn, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return nil, fmt.Errorf("ircclient: dial websocket %s: %w", url, err)
	}
	return newClient(newWSTransport(conn)), nil
}

func newClient(tr transport) *Client {
	c := &Client{
		tr:         tr,
		lines:      make(chan readResult, readQueue),
		done:       make(chan struct{}),
		readerDone: make(chan struct{}),
		seenLimit:  seenLimit,
	}
	go c.readLoop()
	return c
}

// readLoop runs in its own goroutine so that reads can honour a context
// without closing the connection when that context ends.
func (c *Client) readLoop() {
	defer close(c.readerDone)
	defer close(c.lines)
	for {
		line, err := c.tr.readLine()
		if err != nil && !errors.Is(err, ErrLineTooLong) {
			c.readErr = err
			return
		}
		select {
		case c.lines <- readResult{line: line, err: err}:
		case <-c.done:
			c.readErr = io.EOF
			return
		}
	}
}

// Send writes one line; the transport adds the CRLF (streams) or makes it
// one frame (WebSocket). A line containing CR or LF is refused.
func (c *Client) Send(line string) error {
	if strings.ContainsAny(line, "\r\n") {
		return fmt.Errorf("ircclient: send: line contains CR or LF: %q", line)
	}
	select {
	case <-c.done:
		return fmt.Errorf("ircclient: send: %w", net.ErrClosed)
	default:
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if err := c.tr.writeLine(line); err != nil {
		return fmt.Errorf("ircclient: send: %w", err)
	}
	return nil
}

// Sendf formats a line with fmt.Sprintf and sends it.
func (c *Client) Sendf(format string, args ...any) error {
	return c.Send(fmt.Sprintf(format, args...))
}

// ReadMessage returns the next received message and records it in Seen.
// Empty lines are skipped. It returns io.EOF once the connection is closed
// (by either side), ctx.Err() when ctx ends first (no line is lost), an
// error wrapping ErrLineTooLong for an over-long line and one wrapping
// ircmsg.ErrMalformed for an unparsable line; reading may continue after
// those last two.
func (c *Client) ReadMessage(ctx context.Context) (ircmsg.Message, error) {
	for {
		select {
		case <-c.done:
			return ircmsg.Message{}, io.EOF
		default:
		}
		var r readResult
		var ok bool
		select {
		case r, ok = <-c.lines:
		case <-c.done:
			return ircmsg.Message{}, io.EOF
		case <-ctx.Done():
			return ircmsg.Message{}, ctx.Err()
		}
		if !ok {
			return ircmsg.Message{}, c.readErr
		}
		if r.err != nil {
			return ircmsg.Message{}, r.err
		}
		msg, err := ircmsg.Parse(r.line)
		if errors.Is(err, ircmsg.ErrEmpty) {
			continue
		}
		if err != nil {
			return ircmsg.Message{}, fmt.Errorf("ircclient: received %q: %w", r.line, err)
		}
		c.remember(msg)
		return msg, nil
	}
}

// Expect reads until a message satisfies match and returns it. Every message
// read on the way (and the match) stays available through Seen.
func (c *Client) Expect(ctx context.Context, match func(ircmsg.Message) bool) (ircmsg.Message, error) {
	for {
		msg, err := c.ReadMessage(ctx)
		if err != nil {
			return ircmsg.Message{}, err
		}
		if match(msg) {
			return msg, nil
		}
	}
}

// ExpectCommand reads until a message with one of cmds (compared
// case-insensitively; numerics as "001") arrives.
func (c *Client) ExpectCommand(ctx context.Context, cmds ...string) (ircmsg.Message, error) {
	msg, err := c.Expect(ctx, func(m ircmsg.Message) bool {
		return slices.ContainsFunc(cmds, func(cmd string) bool { return strings.EqualFold(cmd, m.Command) })
	})
	if err != nil {
		return msg, fmt.Errorf("ircclient: waiting for %s: %w", strings.Join(cmds, "/"), err)
	}
	return msg, nil
}

// Seen returns a copy of the most recent received messages (at most
// 10,000), oldest first.
func (c *Client) Seen() []ircmsg.Message {
	c.seenMu.Lock()
	defer c.seenMu.Unlock()
	out := make([]ircmsg.Message, 0, len(c.seen))
	out = append(out, c.seen[c.seenStart:]...)
	return append(out, c.seen[:c.seenStart]...)
}

func (c *Client) remember(msg ircmsg.Message) {
	c.seenMu.Lock()
	defer c.seenMu.Unlock()
	if len(c.seen) < c.seenLimit {
		c.seen = append(c.seen, msg)
		return
	}
	c.seen[c.seenStart] = msg
	c.seenStart = (c.seenStart + 1) % c.seenLimit
}

// Close closes the connection without sending QUIT and waits for the reader
// goroutine to stop. It is safe to call more than once.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		close(c.done)
		if err := c.tr.close(); err != nil {
			c.closeErr = fmt.Errorf("ircclient: close: %w", err)
		}
		<-c.readerDone
	})
	return c.closeErr
}
