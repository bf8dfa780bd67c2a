package rest

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/gateway/transport"
)

// serveIRC upgrades GET /irc to a WebSocket and hands it to the IRC
// handler for the life of the connection. Browsers must come from an
// allowed origin (allowsWebSocket); clients that send no Origin
// (non-browser) are admitted.
func (s *Server) serveIRC(c *gin.Context) {
	if origin := c.GetHeader("Origin"); origin != "" && !s.AllowsBrowserOrigin(origin) {
		WriteError(c, http.StatusForbidden, "WebSocket connections from origin "+origin+" are not allowed")
		return
	}
	if !isWebSocketUpgrade(c.Request) {
		c.Header("Upgrade", "websocket")
		WriteError(c, http.StatusUpgradeRequired, "/irc speaks IRC over WebSocket; send a WebSocket upgrade request")
		return
	}
	clientIP := net.ParseIP(c.ClientIP())
	release, ok := s.cfg.IRCLimiter.Acquire(clientIP)
	if !ok {
		c.Header("Retry-After", defaultRetryAfter)
		WriteError(c, http.StatusTooManyRequests, "Too many connections from your address")
		return
	}
	ws, err := websocket.Accept(smallBuffers{c.Writer}, c.Request, &websocket.AcceptOptions{
		InsecureSkipVerify: true, // the origin was checked above
		Subprotocols:       []string{transport.SubprotocolText, transport.SubprotocolBinary},
	})
	if err != nil {
		release()
		s.logger.DebugContext(c.Request.Context(), "websocket upgrade failed", "err", err)
		c.Abort()
		return
	}
	// The session runs on a goroutine of its own and the handler returns: the request, the
	// handler chain's state and its deep stack are not kept for the life of the connection
	// (benchmark B1). net/http cancels the request's context when the handler returns, so the
	// connection keeps its values but not its cancellation; the IRC server closes its
	// connections when it stops.
	conn := transport.NewWebSocketConn(context.WithoutCancel(c.Request.Context()), ws, remoteAddr(c.Request.RemoteAddr, clientIP))
	go func() {
		defer release()
		defer conn.Close()
		s.cfg.IRC(conn)
	}()
}

// smallBuffers hands github.com/coder/websocket the hijacked connection with small bufio buffers: the
// library keeps the reader and writer it is given for the connection's life, and net/http's are
// 4 KiB each, which an idle IRC connection does not need (B1). Bytes the client sent after its
// upgrade request and net/http already read stay in front of the new reader.
type smallBuffers struct{ gin.ResponseWriter }

// webSocketBufferSize fits an ordinary IRC line in one frame; longer frames are read and written
// through it in pieces.
const webSocketBufferSize = 512

func (w smallBuffers) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := w.ResponseWriter.Hijack()
	if err != nil {
		return nil, nil, err
	}
	// net/http set a read deadline for the upgrade request (ReadTimeout)
	// and keeps it on the hijacked connection: a WebSocket lives as long as
	// its session, which the IRC server's pings bound instead.
	if err := conn.SetDeadline(time.Time{}); err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	if err := brw.Writer.Flush(); err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	var src io.Reader = conn
	pending := brw.Reader.Buffered()
	if pending > 0 {
		early, _ := brw.Reader.Peek(pending)
		src = io.MultiReader(bytes.NewReader(bytes.Clone(early)), conn)
	}
	r := bufio.NewReaderSize(src, max(webSocketBufferSize, pending))
	if pending > 0 {
		// Into the new reader's buffer now: the library re-wraps the reader around the
		// connection, keeping only what is buffered.
		if _, err := r.Peek(pending); err != nil {
			_ = conn.Close()
			return nil, nil, err
		}
	}
	return conn, bufio.NewReadWriter(r, bufio.NewWriterSize(conn, webSocketBufferSize)), nil
}

// isWebSocketUpgrade reports whether the request asks for a WebSocket.
func isWebSocketUpgrade(r *http.Request) bool {
	return headerHasToken(r.Header, "Connection", "upgrade") && headerHasToken(r.Header, "Upgrade", "websocket")
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// remoteAddr is the client's address: the resolved client IP (which may
// come from a trusted proxy's header) with the peer's port.
func remoteAddr(peer string, clientIP net.IP) net.Addr {
	addr, err := net.ResolveTCPAddr("tcp", peer)
	if err != nil {
		addr = &net.TCPAddr{}
	}
	if clientIP != nil {
		addr.IP = clientIP
	}
	return addr
}
