package rest

import (
	"net"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
	"nhooyr.io/websocket"

	"github.com/palaver-chat/palaver/gateway/transport"
)

// serveIRC upgrades GET /irc to a WebSocket and hands it to the IRC
// handler for the life of the connection. Browsers must come from an
// allowed origin; clients that send no Origin (non-browser) are admitted.
func (s *Server) serveIRC(c *gin.Context) {
	if origin := c.GetHeader("Origin"); origin != "" && !s.origins.allowsWebSocket(origin, c.Request.Host) {
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
	defer release()

	ws, err := websocket.Accept(c.Writer, c.Request, &websocket.AcceptOptions{
		InsecureSkipVerify: true, // the origin was checked above
		Subprotocols:       []string{transport.SubprotocolText, transport.SubprotocolBinary},
	})
	if err != nil {
		s.logger.DebugContext(c.Request.Context(), "websocket upgrade failed", "err", err)
		c.Abort()
		return
	}
	conn := transport.NewWebSocketConn(c.Request.Context(), ws, remoteAddr(c.Request.RemoteAddr, clientIP))
	defer conn.Close()
	s.cfg.IRC(conn)
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
