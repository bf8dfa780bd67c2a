package media

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/raft/fsm"
	fsmmedia "github.com/palaver-chat/palaver/raft/fsm/media"
)

// retryAfterHolderDown is the Retry-After of a 503 when the holder of an object cannot be reached.
const retryAfterHolderDown = "10"

// servePublic answers /api/v1/media/{id}/{filename}: public uploads only; a private one needs
// its capability URL (403).
func (s *Service) servePublic(c *gin.Context) {
	obj, ok := s.lookup(c, c.Param("id"))
	if !ok {
		return
	}
	if obj.Private {
		rest.WriteError(c, http.StatusForbidden, "This upload is private: use its capability URL")
		return
	}
	s.serve(c, obj)
}

// serveCapability answers /api/v1/media/{id}/{sig}/{filename}: sig must be the id's capability
// (403 otherwise, before anything about the id is revealed); filename is cosmetic.
func (s *Service) serveCapability(c *gin.Context) {
	id, sig := c.Param("id"), c.Param("sig")
	if !validCapability(s.capKey(), id, sig) {
		s.metrics.served.WithLabelValues("none", "forbidden").Inc()
		rest.WriteError(c, http.StatusForbidden, "Bad capability URL")
		return
	}
	obj, ok := s.lookup(c, id)
	if !ok {
		return
	}
	s.serve(c, obj)
}

// lookup finds an upload's record; a miss is checked again after a read index, since the upload
// may have been recorded through another node a moment ago. It answers 404 itself.
func (s *Service) lookup(c *gin.Context, id string) (fsmmedia.MediaObject, bool) {
	var obj fsmmedia.MediaObject
	found := false
	read := func() { s.cfg.State.Read(func(st *fsm.State) { obj, found = fsmmedia.Of(st).Object(id) }) }
	if validID(id) {
		read()
		if !found && s.cfg.Linearize != nil {
			ctx, cancel := context.WithTimeout(c.Request.Context(), 5*time.Second)
			if s.cfg.Linearize(ctx) == nil {
				read()
			}
			cancel()
		}
	}
	if !found {
		s.metrics.served.WithLabelValues("none", "not_found").Inc()
		rest.WriteError(c, http.StatusNotFound, "No such upload")
	}
	return obj, found
}

// serve sends an object from this node's disk or from a server that holds a copy.
//
// A Range header is normalized first (normalizeRange: merged, at most MaxRanges parts), for
// this node's file server and for the holder alike.
func (s *Service) serve(c *gin.Context, obj fsmmedia.MediaObject) {
	if h := c.GetHeader("Range"); h != "" {
		if norm, ok := normalizeRange(h, obj.Size); ok {
			c.Request.Header.Set("Range", norm)
		}
	}
	setMediaHeaders(c.Writer.Header(), obj)
	if obj.HeldBy(s.cfg.Node) || s.store.shared {
		r, err := s.store.open(obj.ID)
		switch {
		case err == nil:
			s.serveLocal(c, obj, r)
			return
		case !errors.Is(err, fs.ErrNotExist):
			s.log.Error("media: opening an object", "id", obj.ID, "err", err)
			s.metrics.served.WithLabelValues("local", "error").Inc()
			rest.WriteError(c, http.StatusInternalServerError, "The upload cannot be read")
			return
		}
		// This node's copy is missing (the repair pass takes it again): another holder serves.
		s.metrics.served.WithLabelValues("local", "missing").Inc()
	}
	s.serveRemote(c, obj)
}

// inlineTypes are shown in place; everything else is a download.
func inline(mimeType string) bool {
	switch mimeType {
	case "image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp", "application/pdf":
		return true
	}
	return strings.HasPrefix(mimeType, "video/") || strings.HasPrefix(mimeType, "audio/")
}

// setMediaHeaders sets the type, a safe Content-Disposition and the caching of served media.
func setMediaHeaders(h http.Header, obj fsmmedia.MediaObject) {
	disposition := "attachment"
	contentType := obj.MIME
	if inline(obj.MIME) {
		disposition = "inline"
	} else if strings.HasPrefix(obj.MIME, "text/") {
		contentType = "text/plain; charset=utf-8" // never rendered as HTML or script
	} else {
		contentType = "application/octet-stream"
	}
	h.Set("Content-Type", contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Disposition", mime.FormatMediaType(disposition, map[string]string{"filename": obj.Filename}))
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	if obj.Private {
		h.Set("Cache-Control", "private, max-age=3600")
	} else {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	}
}

// serveLocal sends the object from r (this node's copy, closed here); http.ServeContent answers
// Range (206, 416).
func (s *Service) serveLocal(c *gin.Context, obj fsmmedia.MediaObject, r *reader) {
	defer r.Close()
	if c.Writer.Header().Get("Content-Type") == "" {
		setMediaHeaders(c.Writer.Header(), obj)
	}
	s.metrics.served.WithLabelValues("local", "ok").Inc()
	http.ServeContent(c.Writer, c.Request, "", time.UnixMilli(obj.At), r)
}

// relayed are the holder's answer headers passed on.
var relayed = []string{"Content-Length", "Content-Range", "Accept-Ranges", "Last-Modified", "ETag"}

// serveRemote streams the object from a server that holds a copy over the cluster plane, the
// Range passed on; a holder that cannot be reached or answers an error gives way to the next.
func (s *Service) serveRemote(c *gin.Context, obj fsmmedia.MediaObject) {
	unavailable := func(msg string) {
		s.metrics.served.WithLabelValues("holder", "unavailable").Inc()
		c.Header("Retry-After", retryAfterHolderDown)
		rest.WriteError(c, http.StatusServiceUnavailable, msg)
	}
	if s.cfg.Holders == nil {
		unavailable("The node that holds this upload is not reachable")
		return
	}
	var resp *http.Response
	missing := 0
	holders := slices.DeleteFunc(rank(obj.ID, obj.HolderSet()), func(n string) bool { return n == s.cfg.Node })
	for _, node := range holders {
		r, err := s.cfg.Holders.FetchHeld(c.Request.Context(), node, obj.ID, c.GetHeader("Range"))
		if err != nil {
			s.log.Warn("media: holder unreachable", "holder", node, "id", obj.ID, "err", err)
			continue
		}
		switch r.StatusCode {
		case http.StatusOK, http.StatusPartialContent, http.StatusRequestedRangeNotSatisfiable:
			resp = r
		case http.StatusNotFound:
			missing++
		default:
			s.log.Warn("media: holder answered an error", "holder", node, "id", obj.ID, "status", r.StatusCode)
		}
		if resp != nil {
			break
		}
		r.Body.Close()
	}
	switch {
	case resp == nil && missing > 0 && missing == len(holders):
		s.metrics.served.WithLabelValues("holder", "missing").Inc()
		rest.WriteError(c, http.StatusNotFound, "The upload's bytes are gone from the nodes that held them")
		return
	case resp == nil:
		unavailable("No node that holds this upload (" + strings.Join(holders, ", ") + ") is reachable now")
		return
	}
	defer resp.Body.Close()
	for _, h := range relayed {
		if v := resp.Header.Get(h); v != "" {
			c.Header(h, v)
		}
	}
	if resp.StatusCode == http.StatusRequestedRangeNotSatisfiable {
		c.Header("Content-Type", "text/plain; charset=utf-8")
	}
	c.Status(resp.StatusCode)
	s.metrics.served.WithLabelValues("holder", "ok").Inc()
	if c.Request.Method != http.MethodHead {
		io.Copy(c.Writer, resp.Body)
	}
}
