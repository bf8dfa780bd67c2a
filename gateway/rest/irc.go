package rest

import (
	"context"
	"net"
	"net/http"
	"strings"

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
	// The session runs on a goroutine of its own and the handler returns: the request, the
	// handler chain's state and its deep stack are not kept for the life of the connection
	// (benchmark B1). Nor is the request's context, which net/http cancels when the handler
	// returns and whose values the connection does not use; the IRC server closes its
	// connections when it stops.
	conn, err := transport.AcceptWebSocket(context.Background(), c.Writer, c.Request,
		remoteAddr(c.Request.RemoteAddr, clientIP), &websocket.AcceptOptions{
			InsecureSkipVerify: true, // the origin was checked above
		})
	if err != nil {
		release()
		s.logger.DebugContext(c.Request.Context(), "websocket upgrade failed", "err", err)
		c.Abort()
		return
	}
	go func() {
		defer release()
		defer conn.Close()
		s.cfg.IRC(conn)
	}()
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
