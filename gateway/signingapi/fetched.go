package signingapi

import (
	"container/list"
	"sync"
	"time"

	"github.com/palaver-chat/palaver/raft/fsm"
)

// Keys read from did:web documents for the anonymous batch lookup (GET /api/v1/signing-keys?keys=)
// are kept here, on this node only, never in the replicated state: anyone may ask for any
// did:web, so whatever such a request leaves behind must stay bounded. The cache holds the last
// maxFetchedDIDs documents read (least recently used first out), each for fetchedKeyTTL, and
// remembers a document without ed25519 keys (or that could not be read) for PeerKeyRetry, so it
// is not asked again meanwhile.
const (
	maxFetchedDIDs = 1024
	fetchedKeyTTL  = time.Hour
)

type fetchedKeys struct {
	mu    sync.Mutex
	max   int
	order *list.List               // of *fetchedDoc, most recently used first
	byDID map[string]*list.Element // did → element of order
}

// fetchedDoc is what one read of a did:web document found: its ed25519 keys by kid (none for a
// miss), as of at.
type fetchedDoc struct {
	did  string
	at   time.Time
	keys map[string]*fsm.KeyRecord
}

func newFetchedKeys(max int) *fetchedKeys {
	return &fetchedKeys{max: max, order: list.New(), byDID: map[string]*list.Element{}}
}

// lookup returns the document read for did, if one was read within ttl (hit) or was a miss
// within retry (then doc has no keys). fresh is false when did must be read again.
func (f *fetchedKeys) lookup(did string, now time.Time, ttl, retry time.Duration) (doc *fetchedDoc, fresh bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	el, ok := f.byDID[did]
	if !ok {
		return nil, false
	}
	doc = el.Value.(*fetchedDoc)
	limit := ttl
	if len(doc.keys) == 0 {
		limit = retry
	}
	if now.Sub(doc.at) >= limit {
		f.order.Remove(el)
		delete(f.byDID, did)
		return nil, false
	}
	f.order.MoveToFront(el)
	return doc, true
}

// key returns the key filed as kid in a fresh document of did, or nil.
func (f *fetchedKeys) key(did, kid string, now time.Time, ttl, retry time.Duration) *fsm.KeyRecord {
	doc, fresh := f.lookup(did, now, ttl, retry)
	if !fresh {
		return nil
	}
	return doc.keys[kid]
}

// put records a read of did's document (keys may be empty: a miss), evicting the least recently
// used document when the cache is full.
func (f *fetchedKeys) put(did string, at time.Time, keys map[string]*fsm.KeyRecord) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if el, ok := f.byDID[did]; ok {
		f.order.Remove(el)
		delete(f.byDID, did)
	}
	for f.order.Len() >= f.max {
		oldest := f.order.Back()
		f.order.Remove(oldest)
		delete(f.byDID, oldest.Value.(*fetchedDoc).did)
	}
	f.byDID[did] = f.order.PushFront(&fetchedDoc{did: did, at: at, keys: keys})
}

// len is the number of documents held.
func (f *fetchedKeys) len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.order.Len()
}
