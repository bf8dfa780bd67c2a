package peering

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/node/signing"
)

// ErrUnknownKey is a kid the peer's did:web document does not list (or the document could not be
// read), possibly remembered from an earlier miss.
var ErrUnknownKey = errors.New("key not in the peer's did:web document")

const maxDocumentBytes = 256 << 10

// Bounds on what forged traffic naming a peer can make this server do. A peer's did.json is read
// at most once per peerDocumentRefresh, whatever kids its envelopes name; a peer is asked for its
// users' keys at most authorKeyBurst times at once and once per authorKeyEvery after that; at
// most maxMisses fruitless author-key look-ups are remembered.
const (
	peerDocumentRefresh = 10 * time.Second
	authorKeyEvery      = time.Second
	authorKeyBurst      = 20
	maxMisses           = 4096
)

// peerKeys holds the server keys read from peers' did:web documents.
type peerKeys struct {
	client *http.Client // SSRF-guarded
	now    func() time.Time
	// file registers a key that verified something through Raft (source origin-server); it is
	// called once per key per process.
	file func(ctx context.Context, did, kid string, pub ed25519.PublicKey) error

	mu         sync.Mutex
	keys       map[string]signing.Keys  // peer DID → kid → key
	read       map[string]time.Time     // peer DID → last read of its document
	authorAsks map[string]*rate.Limiter // peer DID → author-key requests allowed
	misses     *keyresolver.Misses      // "peer did kid" → fruitless author-key look-up
	filed      map[string]bool          // "did kid" registered through Raft
	fetch      sync.Mutex               // one document read at a time
}

func newPeerKeys(client *http.Client, retry time.Duration, now func() time.Time,
	file func(ctx context.Context, did, kid string, pub ed25519.PublicKey) error) *peerKeys {
	return &peerKeys{client: client, now: now, file: file,
		keys: map[string]signing.Keys{}, read: map[string]time.Time{}, authorAsks: map[string]*rate.Limiter{},
		misses: keyresolver.NewMisses(maxMisses, retry), filed: map[string]bool{}}
}

// cached returns a key already read, without any fetch.
func (k *peerKeys) cached(did, kid string) (ed25519.PublicKey, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.keys[did].Lookup(kid)
}

// lookup returns the key kid names in peer's document, reading the document from the peer's
// configured base URL when the kid is not held and the document was not read within
// peerDocumentRefresh (so envelopes naming fresh kids cost one read per interval, not one each).
// Peers are configured, so the per-peer state is bounded.
func (k *peerKeys) lookup(ctx context.Context, peer Peer, kid string) (ed25519.PublicKey, error) {
	if pub, ok := k.cached(peer.DID, kid); ok {
		return pub, nil
	}
	k.fetch.Lock()
	defer k.fetch.Unlock()
	if pub, ok := k.cached(peer.DID, kid); ok { // read while we waited
		return pub, nil
	}
	k.mu.Lock()
	last, read := k.read[peer.DID]
	k.mu.Unlock()
	if next := last.Add(peerDocumentRefresh); read && k.now().Before(next) {
		return nil, fmt.Errorf("%w: %s (document not read again before %s)", ErrUnknownKey, kid, next.Format(time.RFC3339))
	}
	keys, err := k.readDocument(ctx, peer)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.read[peer.DID] = k.now()
	if err == nil {
		k.keys[peer.DID] = keys
	}
	if pub, ok := k.keys[peer.DID].Lookup(kid); ok {
		return pub, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUnknownKey, kid, err)
	}
	return nil, fmt.Errorf("%w: %s", ErrUnknownKey, kid)
}

// readDocument fetches <base>/.well-known/did.json and returns its ed25519 keys, each under the
// kid it hashes to. The document must be the peer's own.
func (k *peerKeys) readDocument(ctx context.Context, peer Peer) (signing.Keys, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	url := peer.BaseURL + "/.well-known/did.json"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("did document of %s: %w", peer.DID, err)
	}
	req.Header.Set("Accept", "application/did+ld+json, application/json")
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("did document of %s: %w", peer.DID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("did document of %s: GET %s answered %s", peer.DID, url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocumentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("did document of %s: %w", peer.DID, err)
	}
	if len(body) > maxDocumentBytes {
		return nil, fmt.Errorf("did document of %s: larger than %d bytes", peer.DID, maxDocumentBytes)
	}
	doc, err := keyresolver.ParseDocument(body)
	if err != nil {
		return nil, fmt.Errorf("did document of %s: %w", peer.DID, err)
	}
	if doc.ID != peer.DID {
		return nil, fmt.Errorf("did document of %s names %q", peer.DID, doc.ID)
	}
	keys := signing.Keys{}
	for _, vm := range doc.VerificationMethod {
		pk, err := keyresolver.ParseMultikey(vm.PublicKeyMultibase)
		if err != nil || pk.Type != keyresolver.Ed25519 || len(pk.Raw) != ed25519.PublicKeySize {
			continue
		}
		keys.Add(ed25519.PublicKey(pk.Raw))
	}
	return keys, nil
}

// fileOnce registers a key through Raft the first time it verified something here; a failed
// registration is tried again next time.
func (k *peerKeys) fileOnce(ctx context.Context, did, kid string, pub ed25519.PublicKey) error {
	k.mu.Lock()
	done := k.filed[did+" "+kid]
	k.mu.Unlock()
	if done || k.file == nil {
		return nil
	}
	if err := k.file(ctx, did, kid, pub); err != nil {
		return err
	}
	k.mu.Lock()
	k.filed[did+" "+kid] = true
	k.mu.Unlock()
	return nil
}

// authorKey reads a user's key from the peer that relays the user's messages:
// GET <base>/api/v1/signing-keys/<did>/<kid> at the peer's configured base URL. The answer counts
// only if its key hashes to kid. A miss is not asked again within the retry interval, and each
// peer is asked at a bounded rate.
func (k *peerKeys) authorKey(ctx context.Context, peer Peer, did, kid string) (ed25519.PublicKey, error) {
	missKey := peer.DID + " " + did + " " + kid
	now := k.now()
	if missed, _ := k.misses.Recent(missKey, now); missed {
		return nil, fmt.Errorf("%w: %s of %s (not asked again yet)", ErrUnknownKey, kid, keyresolver.ShortDID(did))
	}
	k.mu.Lock()
	asks := k.authorAsks[peer.DID]
	if asks == nil {
		asks = rate.NewLimiter(rate.Every(authorKeyEvery), authorKeyBurst)
		k.authorAsks[peer.DID] = asks
	}
	allowed := asks.AllowN(now, 1)
	k.mu.Unlock()
	if !allowed {
		return nil, fmt.Errorf("%w: %s of %s (too many key requests to %s)", ErrUnknownKey, kid, keyresolver.ShortDID(did), peer.DID)
	}
	pub, err := k.readAuthorKey(ctx, peer, did, kid)
	if err != nil {
		k.misses.Add(missKey, now)
		return nil, err
	}
	return pub, nil
}

func (k *peerKeys) readAuthorKey(ctx context.Context, peer Peer, did, kid string) (ed25519.PublicKey, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	u := peer.BaseURL + "/api/v1/signing-keys/" + url.PathEscape(did) + "/" + url.PathEscape(kid)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("author key: %w", err)
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("author key: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: GET %s answered %s", ErrUnknownKey, u, resp.Status)
	}
	var body struct {
		PublicKey string `json:"public_key"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&body); err != nil {
		return nil, fmt.Errorf("author key: %w", err)
	}
	pub, err := signing.ParsePublicKey(body.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("author key: %w", err)
	}
	if signing.KID(pub) != kid {
		return nil, fmt.Errorf("%w: the peer's key for %s does not hash to %s", ErrUnknownKey, did, kid)
	}
	return pub, nil
}
