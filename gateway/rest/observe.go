package rest

import (
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
)

// unmatchedRoute labels requests that matched no route, so that unknown
// paths cannot grow the metrics' label sets.
const unmatchedRoute = "unmatched"

// observe records each request in the metrics, labelled with the route
// template rather than the raw path, and logs it at Debug.
func (s *Server) observe(c *gin.Context) {
	start := time.Now()
	c.Next()
	elapsed := time.Since(start)

	route := c.FullPath()
	if route == "" {
		route = unmatchedRoute
	}
	method := metricMethod(c.Request.Method)
	status := c.Writer.Status()
	if m := s.cfg.Metrics; m != nil {
		m.HTTPRequests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
		m.HTTPSeconds.WithLabelValues(method, route).Observe(elapsed.Seconds())
	}
	ctx := c.Request.Context()
	if s.logger.Enabled(ctx, slog.LevelDebug) {
		s.logger.DebugContext(ctx, "http request",
			"method", c.Request.Method, "path", c.Request.URL.Path, "route", route,
			"status", status, "bytes", c.Writer.Size(), "duration", elapsed, "client_ip", c.ClientIP())
	}
}

// metricMethod keeps the method label to the standard methods.
func metricMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}
