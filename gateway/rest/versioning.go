package rest

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
)

// Versioning (contract §9): the path carries the major version. A major
// version being retired keeps being served while its responses carry
// Deprecation (RFC 9745) and Sunset (RFC 8594) headers for at least 90
// days before removal, plus a Link to the announcement.

// MinDeprecationNotice is the shortest time between a version's
// deprecation and its sunset.
const MinDeprecationNotice = 90 * 24 * time.Hour

// RetiredVersion is a major API version announced for removal.
type RetiredVersion struct {
	// Prefix is the version's path prefix, e.g. "/api/v1".
	Prefix string
	// Deprecated is when the retirement was announced.
	Deprecated time.Time
	// Sunset is when the version stops being served; at least
	// MinDeprecationNotice after Deprecated.
	Sunset time.Time
	// Link points at the announcement or the successor's documentation.
	Link string
}

var versionPrefix = regexp.MustCompile(`^/api/v[0-9]+$`)

// Retire marks a major version as retired: every response under its
// prefix carries Deprecation, Sunset and a deprecation Link from now on.
// Call it before the server handles requests.
func (s *Server) Retire(v RetiredVersion) error {
	switch {
	case !versionPrefix.MatchString(v.Prefix):
		return fmt.Errorf("rest: retired version prefix %q is not of the form /api/vN", v.Prefix)
	case v.Deprecated.IsZero() || v.Sunset.IsZero():
		return errors.New("rest: a retired version needs both its deprecation and its sunset time")
	case v.Sunset.Sub(v.Deprecated) < MinDeprecationNotice:
		return fmt.Errorf("rest: %s: the sunset must come at least 90 days after the deprecation", v.Prefix)
	case v.Link == "":
		return fmt.Errorf("rest: %s: a retired version needs a link to its announcement", v.Prefix)
	}
	s.retired = append(s.retired, v)
	return nil
}

// deprecation adds the retirement headers to responses under a retired
// version's prefix.
func (s *Server) deprecation(c *gin.Context) {
	path := c.Request.URL.Path
	for _, v := range s.retired {
		if path != v.Prefix && !strings.HasPrefix(path, v.Prefix+"/") {
			continue
		}
		h := c.Writer.Header()
		h.Set("Deprecation", "@"+strconv.FormatInt(v.Deprecated.Unix(), 10))
		h.Set("Sunset", v.Sunset.UTC().Format(http.TimeFormat))
		h.Add("Link", "<"+v.Link+`>; rel="deprecation"`)
		break
	}
	c.Next()
}
