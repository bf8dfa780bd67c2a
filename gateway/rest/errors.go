package rest

import (
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/gin-gonic/gin"
)

// ErrorObject is the body of every 4xx/5xx under /api/v1.
type ErrorObject struct {
	// Error is the HTTP reason phrase; stable, safe to branch on.
	Error string `json:"error"`
	// Status is the HTTP status code.
	Status int `json:"status"`
	// Message is prose; not stable.
	Message string `json:"message"`
	// Documentation points at the contract document.
	Documentation string `json:"documentation"`
}

// contextKey names the values the server keeps in the gin context.
type contextKey int

const (
	// baseURLKey holds the base URL, so that WriteError, a plain function,
	// can build the documentation link.
	baseURLKey contextKey = iota
	// didKey holds the DID admitted by a bearer token.
	didKey
)

// WriteError answers with the Error object and aborts the handler chain.
// An empty message is replaced by the reason phrase.
func WriteError(c *gin.Context, status int, message string) {
	if message == "" {
		message = http.StatusText(status)
	}
	base, _ := c.Get(baseURLKey)
	baseURL, _ := base.(string)
	if baseURL == "" {
		baseURL = requestOrigin(c.Request)
	}
	c.AbortWithStatusJSON(status, ErrorObject{
		Error:         http.StatusText(status),
		Status:        status,
		Message:       message,
		Documentation: baseURL + "/api/v1/openapi.json",
	})
}

// isAPIPath reports whether a path is under /api, where errors are JSON.
func isAPIPath(path string) bool {
	return path == "/api" || strings.HasPrefix(path, "/api/")
}

func (s *Server) notFound(c *gin.Context) {
	path := c.Request.URL.Path
	if isAPIPath(path) {
		WriteError(c, http.StatusNotFound, "No such endpoint: "+path)
		return
	}
	body := fmt.Sprintf("# Not found\n\nThere is no page at `%s`.\n\n"+
		"Start from the index of this service: [%[2]s/llms.txt](%[2]s/llms.txt).\n",
		markdownCode(path), s.baseURL(c))
	c.Data(http.StatusNotFound, "text/markdown; charset=utf-8", []byte(body))
	c.Abort()
}

// markdownCode makes a request path safe inside a markdown code span.
func markdownCode(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '`' || r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

func methodNotAllowed(c *gin.Context) {
	WriteError(c, http.StatusMethodNotAllowed,
		fmt.Sprintf("Method %s is not allowed on %s; allowed: %s", c.Request.Method, c.Request.URL.Path, c.Writer.Header().Get("Allow")))
}

// recovery turns a panic into a 500 Error object and logs it with its
// stack; the client never sees the stack.
func (s *Server) recovery() gin.HandlerFunc {
	return gin.CustomRecoveryWithWriter(nil, func(c *gin.Context, recovered any) {
		s.logger.ErrorContext(c.Request.Context(), "panic serving HTTP request",
			"method", c.Request.Method, "path", c.Request.URL.Path,
			"panic", fmt.Sprint(recovered), "stack", string(debug.Stack()))
		if c.Writer.Written() {
			c.Abort()
			return
		}
		WriteError(c, http.StatusInternalServerError, "")
	})
}
