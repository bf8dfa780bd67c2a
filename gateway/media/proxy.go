package media

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/gateway/fetchguard"
	"github.com/palaver-chat/palaver/gateway/rest"
)

// getBlobPath is the XRPC method whose URLs the blob proxy relays.
const getBlobPath = "/xrpc/com.atproto.sync.getBlob"

// blobAllowed reports whether the blob proxy may fetch u: https getBlob URLs on the Bluesky PDS
// hosts (*.bsky.network, bsky.social), anything on cdn.bsky.app, and getBlob URLs on the
// configured extra origins.
func (s *Service) blobAllowed(u *url.URL) bool {
	if u.RawQuery == "" && u.Host != "cdn.bsky.app" {
		return false
	}
	origin := u.Scheme + "://" + u.Host
	for _, o := range s.opts.BlobOrigins {
		if strings.EqualFold(o, origin) && u.Path == getBlobPath {
			return true
		}
	}
	if u.Scheme != "https" || u.Port() != "" {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if host == "cdn.bsky.app" {
		return true
	}
	return u.Path == getBlobPath && (host == "bsky.social" || strings.HasSuffix(host, ".bsky.network"))
}

// blob relays a PDS blob: GET /api/v1/blob?url=&mime=.
func (s *Service) blob(c *gin.Context) {
	raw := c.Query("url")
	u, err := s.guard.CheckURL(raw)
	if err != nil || !s.blobAllowed(u) {
		s.metrics.refusals.WithLabelValues("blob").Inc()
		rest.WriteError(c, http.StatusBadRequest, "url must be a PDS blob URL (com.atproto.sync.getBlob on an allowed host, or cdn.bsky.app)")
		return
	}
	header := http.Header{}
	if r := c.GetHeader("Range"); r != "" {
		header.Set("Range", r)
	}
	resp, err := s.guard.Get(c.Request.Context(), u.String(), header)
	if err != nil {
		s.fetchFailed(c, "blob", err)
		return
	}
	defer resp.Body.Close()
	s.relay(c, "blob", resp, c.Query("mime"))
}

// fetchFailed answers a failed proxy fetch: 400 when the guard refused where it led, 502 else.
func (s *Service) fetchFailed(c *gin.Context, proxy string, err error) {
	if errors.Is(err, fetchguard.ErrBlocked) {
		s.metrics.refusals.WithLabelValues(proxy).Inc()
		rest.WriteError(c, http.StatusBadRequest, "The URL leads to an address this server does not fetch")
		return
	}
	s.metrics.fetches.WithLabelValues(proxy, "error").Inc()
	s.log.Debug("media proxy fetch failed", "proxy", proxy, "err", err)
	rest.WriteError(c, http.StatusBadGateway, "Fetch failed")
}

// relay passes a fetched body on: the status (200, 206, 416 or 404; other errors become 502),
// the range headers, a safe type and never an attachment disposition, at most MaxProxyBytes.
func (s *Service) relay(c *gin.Context, proxy string, resp *http.Response, mimeHint string) {
	switch resp.StatusCode {
	case http.StatusOK, http.StatusPartialContent, http.StatusRequestedRangeNotSatisfiable:
	case http.StatusNotFound, http.StatusGone:
		s.metrics.fetches.WithLabelValues(proxy, "not_found").Inc()
		rest.WriteError(c, http.StatusNotFound, "The blob was not found upstream")
		return
	default:
		s.metrics.fetches.WithLabelValues(proxy, "upstream_error").Inc()
		rest.WriteError(c, http.StatusBadGateway, "The upstream server answered "+resp.Status)
		return
	}
	if resp.ContentLength > s.opts.MaxProxyBytes {
		s.metrics.fetches.WithLabelValues(proxy, "too_large").Inc()
		rest.WriteError(c, http.StatusBadGateway, "Body too large")
		return
	}
	for _, h := range []string{"Content-Length", "Content-Range", "Accept-Ranges", "ETag", "Last-Modified"} {
		if v := resp.Header.Get(h); v != "" {
			c.Header(h, v)
		}
	}
	ct := safeType(mimeHint)
	if ct == "" {
		ct = safeType(resp.Header.Get("Content-Type"))
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	c.Header("Content-Type", ct)
	c.Header("X-Content-Type-Options", "nosniff")
	c.Header("Content-Security-Policy", "default-src 'none'; sandbox")
	c.Header("Cache-Control", "public, max-age=3600")
	c.Status(resp.StatusCode)
	s.metrics.fetches.WithLabelValues(proxy, "ok").Inc()
	io.Copy(c.Writer, io.LimitReader(resp.Body, s.opts.MaxProxyBytes))
}

// safeType keeps a media type that is shown in place (image, video, audio); "" otherwise.
func safeType(v string) string {
	t, _, err := mime.ParseMediaType(v)
	if err != nil {
		return ""
	}
	if (strings.HasPrefix(t, "image/") && t != "image/svg+xml") || strings.HasPrefix(t, "video/") || strings.HasPrefix(t, "audio/") {
		return t
	}
	return ""
}
