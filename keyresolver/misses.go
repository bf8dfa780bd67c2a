package keyresolver

import (
	"container/list"
	"sync"
	"time"
)

// Misses remembers recent fruitless look-ups (a key a document did not list,
// a DID with no usable document) so they are not asked again at once. It
// keeps at most a fixed number of entries, dropping the oldest first, and
// forgets each after its TTL, so look-ups keyed by attacker-chosen names
// cannot grow it without bound. It is safe for concurrent use.
type Misses struct {
	max int
	ttl time.Duration

	mu    sync.Mutex
	byKey map[string]*list.Element // → *missEntry in order
	order list.List                // oldest first
}

type missEntry struct {
	key string
	at  time.Time
}

// NewMisses returns a set of at most max misses, each remembered for ttl.
func NewMisses(max int, ttl time.Duration) *Misses {
	return &Misses{max: max, ttl: ttl, byKey: make(map[string]*list.Element)}
}

// Recent reports whether key missed within the TTL before now, and when
// it will be asked again.
func (m *Misses) Recent(key string, now time.Time) (recent bool, until time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.byKey[key]
	if !ok {
		return false, time.Time{}
	}
	e := el.Value.(*missEntry)
	if !now.Before(e.at.Add(m.ttl)) {
		m.remove(el)
		return false, time.Time{}
	}
	return true, e.at.Add(m.ttl)
}

// Add records a miss of key at now.
func (m *Misses) Add(key string, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.byKey[key]; ok {
		el.Value.(*missEntry).at = now
		m.order.MoveToBack(el)
		return
	}
	m.byKey[key] = m.order.PushBack(&missEntry{key: key, at: now})
	for m.order.Len() > m.max {
		m.remove(m.order.Front())
	}
}

// Forget drops key.
func (m *Misses) Forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.byKey[key]; ok {
		m.remove(el)
	}
}

// Len is the number of misses held (some may have expired).
func (m *Misses) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.order.Len()
}

func (m *Misses) remove(el *list.Element) {
	delete(m.byKey, el.Value.(*missEntry).key)
	m.order.Remove(el)
}
