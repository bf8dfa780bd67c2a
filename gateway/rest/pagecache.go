package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/node/eventstore"
)

// maxCachedPages bounds the history pages kept; the cache starts over when it is full.
const maxCachedPages = 256

// jsonContentType is what gin's JSON renderers send.
const jsonContentType = "application/json; charset=utf-8"

// generationSource is implemented by the event store (*eventstore.Store): a number that changes
// after every write that can change a read's answer. A store without it is never cached.
type generationSource interface {
	Generation() uint64
}

// pageKey is everything a history answer depends on besides the store's content.
type pageKey struct {
	byMsgID bool // the /history/{channel} route, whose msgid cursor is an exact walk
	venue   string
	// incarnation is the channel's: a channel created again under the name serves another history
	// from the same store content (eventstore's "Channel incarnations").
	incarnation string
	before      cursor
	limit       int
}

// pageCache keeps encoded history pages for one store generation. The many readers of a busy
// channel's newest page (B12) then cost a map lookup instead of a store read, a reaction tally and
// JSON encoding; any write to the store moves the generation on and the next read starts a fresh
// cache. Who may read a channel is checked on every request, before the cache is consulted.
type pageCache struct {
	mu    sync.Mutex
	gen   uint64
	pages map[pageKey][]byte
}

// get returns the page cached for key at generation gen.
func (pc *pageCache) get(gen uint64, key pageKey) ([]byte, bool) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.gen != gen {
		return nil, false
	}
	body, ok := pc.pages[key]
	return body, ok
}

// put keeps body, read while the store was at generation gen. An answer read at an older
// generation than the cache's is dropped; a newer one starts the cache over.
func (pc *pageCache) put(gen uint64, key pageKey, body []byte) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	switch {
	case gen < pc.gen:
		return
	case gen > pc.gen || pc.pages == nil || len(pc.pages) >= maxCachedPages:
		pc.gen, pc.pages = gen, make(map[pageKey][]byte)
	}
	pc.pages[key] = body
}

// serveHistoryPage answers a history read with the page load returns, rendered as PureJSON
// renders it, from the page cache when the store has not changed since the page was cached.
func (s *Server) serveHistoryPage(c *gin.Context, key pageKey, load func(ctx context.Context) ([]eventstore.Message, error)) {
	ctx := c.Request.Context()
	gens, cacheable := s.cfg.Events.(generationSource)
	var gen uint64
	if cacheable {
		gen = gens.Generation() // before the read: a write the read misses moves it on
		if body, ok := s.pages.get(gen, key); ok {
			c.Data(http.StatusOK, jsonContentType, body)
			return
		}
	}
	msgs, err := load(ctx)
	if err != nil {
		s.storeFailed(c, "history", err)
		return
	}
	body, err := encodePureJSON(viewMessages(s.withReactions(ctx, msgs)))
	if err != nil {
		s.logger.ErrorContext(ctx, "encoding a history page failed", "err", err)
		WriteError(c, http.StatusInternalServerError, "The history page could not be encoded")
		return
	}
	if cacheable {
		s.pages.put(gen, key, body)
	}
	c.Data(http.StatusOK, jsonContentType, body)
}

// encodePureJSON encodes v byte for byte as gin's PureJSON does (no HTML escaping, a final newline).
func encodePureJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
