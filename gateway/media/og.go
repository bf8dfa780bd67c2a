package media

import (
	"container/list"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/palaver-chat/palaver/gateway/rest"
)

const (
	// maxPreviewBody bounds the HTML read for a preview.
	maxPreviewBody = 1 << 20
	// maxPreviewField bounds each text of a preview.
	maxPreviewField  = 1024
	previewCacheSize = 512
	previewTTL       = 10 * time.Minute
)

// Preview is a link preview.
type Preview struct {
	Title       string `json:"title"`
	Description string `json:"description"`
	Image       string `json:"image"`
	SiteName    string `json:"site_name"`
	URL         string `json:"url"`
}

// preview answers GET /api/v1/og?url=.
func (s *Service) preview(c *gin.Context) {
	u, err := s.guard.CheckURL(c.Query("url"))
	if err != nil {
		s.metrics.refusals.WithLabelValues("og").Inc()
		rest.WriteError(c, http.StatusBadRequest, "Invalid URL: "+strings.TrimPrefix(err.Error(), "fetchguard: "))
		return
	}
	key := u.String()
	if p, ok := s.og.get(key, time.Now()); ok {
		c.JSON(http.StatusOK, p)
		return
	}
	resp, err := s.guard.Get(c.Request.Context(), key, http.Header{"Accept": {"text/html,application/xhtml+xml"}})
	if err != nil {
		s.fetchFailed(c, "og", err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.metrics.fetches.WithLabelValues("og", "upstream_error").Inc()
		rest.WriteError(c, http.StatusBadGateway, "Fetch failed: the page answered "+resp.Status)
		return
	}
	if t, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); t != "text/html" && t != "application/xhtml+xml" {
		s.metrics.fetches.WithLabelValues("og", "not_html").Inc()
		rest.WriteError(c, http.StatusBadGateway, "Not HTML")
		return
	}
	p := parsePreview(io.LimitReader(resp.Body, maxPreviewBody), resp.Request.URL)
	s.metrics.fetches.WithLabelValues("og", "ok").Inc()
	s.og.put(key, p, time.Now())
	c.JSON(http.StatusOK, p)
}

// parsePreview reads og:* meta tags, with <title> and the description meta tag as fallbacks,
// up to the end of <head> (or of the bounded input). Relative image and page URLs are resolved
// against base; only http(s) ones are kept.
func parsePreview(r io.Reader, base *url.URL) Preview {
	var p, fallback Preview
	z := html.NewTokenizer(r)
	inTitle := false
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return finishPreview(p, fallback, base)
		case html.EndTagToken:
			name, _ := z.TagName()
			switch atom.Lookup(name) {
			case atom.Head:
				return finishPreview(p, fallback, base)
			case atom.Title:
				inTitle = false
			}
		case html.TextToken:
			if inTitle && fallback.Title == "" {
				fallback.Title = strings.TrimSpace(string(z.Text()))
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			switch atom.Lookup(name) {
			case atom.Title:
				inTitle = tt == html.StartTagToken
			case atom.Body:
				return finishPreview(p, fallback, base)
			case atom.Meta:
				if !hasAttr {
					continue
				}
				var prop, content string
				for {
					k, v, more := z.TagAttr()
					switch strings.ToLower(string(k)) {
					case "property", "name":
						if prop == "" || strings.HasPrefix(strings.ToLower(string(v)), "og:") {
							prop = strings.ToLower(string(v))
						}
					case "content":
						content = strings.TrimSpace(string(v))
					}
					if !more {
						break
					}
				}
				setPreviewField(&p, &fallback, prop, content)
			}
		}
	}
}

func setPreviewField(p, fallback *Preview, prop, content string) {
	dst := map[string]*string{"og:title": &p.Title, "og:description": &p.Description, "og:image": &p.Image,
		"og:image:url": &p.Image, "og:site_name": &p.SiteName, "og:url": &p.URL,
		"description": &fallback.Description}[prop]
	if dst != nil && *dst == "" {
		*dst = content
	}
}

func finishPreview(p, fallback Preview, base *url.URL) Preview {
	if p.Title == "" {
		p.Title = fallback.Title
	}
	if p.Description == "" {
		p.Description = fallback.Description
	}
	p.Image = absoluteHTTP(p.Image, base)
	p.URL = absoluteHTTP(p.URL, base)
	if p.URL == "" {
		p.URL = base.String()
	}
	for _, f := range []*string{&p.Title, &p.Description, &p.SiteName, &p.Image, &p.URL} {
		*f = clip(*f, maxPreviewField)
	}
	return p
}

// absoluteHTTP resolves ref against base and keeps it only when it is http(s).
func absoluteHTTP(ref string, base *url.URL) string {
	if ref == "" {
		return ""
	}
	u, err := base.Parse(ref)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return ""
	}
	return u.String()
}

// clip cuts s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n]
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// previewCache is a small LRU of previews, each kept for ttl.
type previewCache struct {
	mu    sync.Mutex
	size  int
	ttl   time.Duration
	order *list.List // of *previewEntry, most recent first
	byKey map[string]*list.Element
}

type previewEntry struct {
	key string
	p   Preview
	at  time.Time
}

func newPreviewCache(size int, ttl time.Duration) *previewCache {
	return &previewCache{size: size, ttl: ttl, order: list.New(), byKey: map[string]*list.Element{}}
}

func (c *previewCache) get(key string, now time.Time) (Preview, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.byKey[key]
	if el == nil {
		return Preview{}, false
	}
	e := el.Value.(*previewEntry)
	if now.Sub(e.at) > c.ttl {
		c.order.Remove(el)
		delete(c.byKey, key)
		return Preview{}, false
	}
	c.order.MoveToFront(el)
	return e.p, true
}

func (c *previewCache) put(key string, p Preview, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.byKey[key]; el != nil {
		el.Value = &previewEntry{key: key, p: p, at: now}
		c.order.MoveToFront(el)
		return
	}
	c.byKey[key] = c.order.PushFront(&previewEntry{key: key, p: p, at: now})
	for c.order.Len() > c.size {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.byKey, old.Value.(*previewEntry).key)
	}
}
