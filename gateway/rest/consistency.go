package rest

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
)

// consistency applies the read consistency a GET under /api/ asks for: `local` (the default: this
// node's replica as it is, which may lag the leader by a few milliseconds) or `strong` (wait until
// the replica has applied every change committed when the request arrived, so a read on any node
// sees every acknowledged write).
func (s *Server) consistency(c *gin.Context) {
	mode, asked := c.GetQuery("consistency")
	if !asked || !strings.HasPrefix(c.Request.URL.Path, "/api/") {
		c.Next()
		return
	}
	switch mode {
	case "", "local":
	case "strong":
		if s.cfg.Linearize == nil {
			break // a server without replication is trivially up to date
		}
		ctx, cancel := context.WithTimeout(c.Request.Context(), 10*time.Second)
		err := s.cfg.Linearize(ctx)
		cancel()
		if err != nil {
			WriteError(c, http.StatusServiceUnavailable, "no leader answered the read-index request; try again or read with consistency=local")
			c.Abort()
			return
		}
	default:
		WriteError(c, http.StatusBadRequest, "consistency must be local or strong")
		c.Abort()
		return
	}
	c.Next()
}
