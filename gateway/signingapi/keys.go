package signingapi

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/raft/fsm"
)

const (
	maxBatchPairs     = 50
	maxDIDWebPerBatch = 5
	// maxFetchedKeysPerDoc caps the keys kept from one did:web document read for the batch lookup.
	maxFetchedKeysPerDoc = 16
	sigTagFormat         = "ed25519:<kid>:<base64url-nopad signature>"
)

// keyJSON is a Signing key as the contract lists it.
type keyJSON struct {
	DID          string  `json:"did,omitempty"`
	KID          string  `json:"kid"`
	Algorithm    string  `json:"algorithm,omitempty"`
	PublicKey    string  `json:"public_key"`
	Encoding     string  `json:"encoding,omitempty"`
	Source       string  `json:"source,omitempty"`
	RegisteredAt *int64  `json:"registered_at"`
	LastSeenAt   int64   `json:"last_seen_at"`
	RemovedAt    *int64  `json:"removed_at"`
	ExpiresAt    *int64  `json:"expires_at"`
	KeySource    *string `json:"key_source,omitempty"`
}

func optional(v int64) *int64 {
	if v == 0 {
		return nil
	}
	return &v
}

func toJSON(did string, k *fsm.KeyRecord, detailed bool) keyJSON {
	out := keyJSON{KID: k.KID, PublicKey: signing.EncodePublicKey(k.PublicKey), RegisteredAt: optional(k.RegisteredAt),
		LastSeenAt: k.LastSeenAt, RemovedAt: optional(k.RemovedAt), ExpiresAt: optional(k.ExpiresAt), DID: did}
	if detailed {
		out.Algorithm, out.Encoding, out.Source = "ed25519", "base64url", k.Source
	}
	return out
}

// signingKey serves GET /api/v1/signing-key: this node's public key.
func (a *API) signingKey(c *gin.Context) {
	var registered *int64
	a.cfg.State.Read(func(st *fsm.State) {
		if k, ok := st.Key(a.ServerDID(), a.kid); ok {
			registered = optional(k.RegisteredAt())
		}
	})
	c.JSON(http.StatusOK, gin.H{
		"algorithm": "ed25519", "public_key": signing.EncodePublicKey(a.pub), "kid": a.kid,
		"registered_at": registered, "expires_at": nil, "did": a.ServerDID(), "encoding": "base64url",
		"usage": "message-signing", "canonical_form": "jcs-per-event-kind",
		"spec": strings.TrimRight(a.cfg.BaseURL, "/") + "/api/v1/openapi.json", "sig_tag_format": sigTagFormat,
		"tag": "+freeq.at/sig",
	})
}

// didDocument serves GET /.well-known/did.json: the server's did:web document. It lists this
// node's key first (#freeq) and then the server key of every other node of the cluster (from the
// replicated registry, #node-<kid>), so a peer server verifies a signature by any node of this
// server through one document.
func (a *API) didDocument(c *gin.Context) {
	did := a.ServerDID()
	var others []ed25519.PublicKey
	a.cfg.State.Read(func(st *fsm.State) {
		for _, k := range st.AllKeys() {
			if k.Source() == "server-key" && k.RemovedAt() == 0 && k.KID() != a.kid {
				others = append(others, k.PublicKey())
			}
		}
	})
	sort.Slice(others, func(i, j int) bool { return signing.KID(others[i]) < signing.KID(others[j]) })
	methods := make([]gin.H, 0, 1+len(others))
	assertions := make([]string, 0, 1+len(others))
	for i, pub := range append([]ed25519.PublicKey{a.pub}, others...) {
		mb, err := keyresolver.EncodeMultikey(keyresolver.PublicKey{Type: keyresolver.Ed25519, Raw: pub})
		if err != nil {
			rest.WriteError(c, http.StatusInternalServerError, "a server key cannot be encoded")
			return
		}
		vm := did + "#freeq"
		if i > 0 {
			vm = did + "#node-" + signing.KID(pub)
		}
		methods = append(methods, gin.H{"id": vm, "type": "Multikey", "controller": did, "publicKeyMultibase": mb})
		assertions = append(assertions, vm)
	}
	c.JSON(http.StatusOK, gin.H{
		"@context":           []string{"https://www.w3.org/ns/did/v1", "https://w3id.org/security/multikey/v1"},
		"id":                 did,
		"verificationMethod": methods,
		"assertionMethod":    assertions,
		"service": []gin.H{{
			"id": "#freeq_keys", "type": "FreeqSigningKeys",
			"serviceEndpoint": strings.TrimRight(a.cfg.BaseURL, "/") + "/api/v1/signing-keys/" + url.PathEscape(did),
		}},
	})
}

// pathDID reads and validates the {did} path parameter.
func pathDID(c *gin.Context) (string, bool) {
	did := c.Param("did")
	if _, err := keyresolver.ValidateDID(did); err != nil {
		rest.WriteError(c, http.StatusBadRequest, "not a DID: "+truncate(did, 80))
		return "", false
	}
	return did, true
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// keysByDID serves GET /api/v1/signing-keys/{did}: newest registration first, expired keys left
// out, retired keys kept with their date; public_key is the current live key.
func (a *API) keysByDID(c *gin.Context) {
	did, ok := pathDID(c)
	if !ok {
		return
	}
	now := a.cfg.Now().Unix()
	var keys []*fsm.KeyRecord
	a.cfg.State.Read(func(st *fsm.State) {
		for _, k := range a.keysOf(st, did) {
			keys = append(keys, k)
		}
	})
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].RegisteredAt != keys[j].RegisteredAt {
			return keys[i].RegisteredAt > keys[j].RegisteredAt
		}
		return keys[i].KID < keys[j].KID
	})
	items := []keyJSON{}
	var current *fsm.KeyRecord
	for _, k := range keys {
		if k.ExpiresAt != 0 && now >= k.ExpiresAt {
			continue
		}
		item := toJSON("", k, false)
		item.DID = ""
		items = append(items, item)
		if k.RemovedAt == 0 && (current == nil || k.LastSeenAt > current.LastSeenAt) {
			current = k
		}
	}
	var publicKey *string
	if current != nil {
		pk := signing.EncodePublicKey(current.PublicKey)
		publicKey = &pk
	}
	c.JSON(http.StatusOK, gin.H{"did": did, "algorithm": "ed25519", "public_key": publicKey, "encoding": "base64url",
		"source": "key-store", "keys": items})
}

// keyByKID serves GET /api/v1/signing-keys/{did}/{kid}, whatever the key's state.
func (a *API) keyByKID(c *gin.Context) {
	did, ok := pathDID(c)
	if !ok {
		return
	}
	kid := c.Param("kid")
	var rec *fsm.KeyRecord
	a.cfg.State.Read(func(st *fsm.State) {
		rec = a.keyOf(st, did, kid)
	})
	if rec == nil {
		rest.WriteError(c, http.StatusNotFound, "no key "+truncate(kid, 40)+" filed under "+truncate(did, 80))
		return
	}
	c.JSON(http.StatusOK, toJSON(did, rec, true))
}

// keysOf lists the keys filed under did. Under the deployment's DID (did:web:<server name>) that
// is every node's server key, wherever the node filed it: each node of a cluster registers its
// key under its own node name, and all of them sign for the same server. The records are copies.
func (a *API) keysOf(st *fsm.State, did string) map[string]*fsm.KeyRecord {
	out := map[string]*fsm.KeyRecord{}
	for _, k := range st.KeysOf(did) {
		r := k.Record()
		out[r.KID] = &r
	}
	if did != a.ServerDID() {
		return out
	}
	for _, k := range st.AllKeys() {
		if k.Source() == "server-key" && out[k.KID()] == nil {
			r := k.Record()
			out[r.KID] = &r
		}
	}
	return out
}

// keyOf is a copy of the key kid filed under did, node server keys counting as the deployment's
// (see keysOf); nil when there is none.
func (a *API) keyOf(st *fsm.State, did, kid string) *fsm.KeyRecord {
	if k, ok := st.Key(did, kid); ok {
		r := k.Record()
		return &r
	}
	if did != a.ServerDID() {
		return nil
	}
	for _, k := range st.AllKeys() {
		if k.KID() == kid && k.Source() == "server-key" {
			r := k.Record()
			return &r
		}
	}
	return nil
}

type pair struct{ did, kid string }

// parsePairs applies the batch rules: items split on ',' and trimmed, empty ones dropped, each
// split on its first '/'; more than 50 (before duplicates are removed), none, or one without '/'
// is an error; duplicates are dropped keeping request order.
func parsePairs(raw string) ([]pair, string) {
	var items []string
	for _, it := range strings.Split(raw, ",") {
		if it = strings.TrimSpace(it); it != "" {
			items = append(items, it)
		}
	}
	if len(items) == 0 {
		return nil, "keys: give at least one did/kid pair"
	}
	if len(items) > maxBatchPairs {
		return nil, "keys: at most 50 did/kid pairs per request"
	}
	seen := map[pair]bool{}
	var out []pair
	for _, it := range items {
		did, kid, ok := strings.Cut(it, "/")
		if !ok {
			return nil, "keys: each item must be did/kid: " + truncate(it, 80)
		}
		p := pair{did, kid}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, ""
}

// batchKeys serves GET /api/v1/signing-keys?keys=did/kid,... from the replicated keys, and for a
// did:web key the state does not hold, from the document read on demand (at most
// maxDIDWebPerBatch reads per request) into the node's bounded cache (fetched.go).
func (a *API) batchKeys(c *gin.Context) {
	pairs, problem := parsePairs(c.Query("keys"))
	if problem != "" {
		rest.WriteError(c, http.StatusBadRequest, problem)
		return
	}
	now := a.cfg.Now()
	held := func(p pair) (keyJSON, bool) {
		var out keyJSON
		found := false
		a.cfg.State.Read(func(st *fsm.State) {
			if k := a.keyOf(st, p.did, p.kid); k != nil {
				out, found = toJSON(p.did, k, false), true
			}
		})
		if !found && strings.HasPrefix(p.did, "did:web:") {
			if k := a.fetched.key(p.did, p.kid, now, fetchedKeyTTL, a.cfg.PeerKeyRetry); k != nil {
				out, found = toJSON(p.did, k, false), true
			}
		}
		return out, found
	}
	fetched := 0
	asked := map[string]bool{}
	for _, p := range pairs {
		if _, ok := held(p); ok || !strings.HasPrefix(p.did, "did:web:") || asked[p.did] || fetched >= maxDIDWebPerBatch {
			continue
		}
		if _, fresh := a.fetched.lookup(p.did, now, fetchedKeyTTL, a.cfg.PeerKeyRetry); fresh {
			continue // read recently: the kid is not in it
		}
		asked[p.did] = true
		fetched++
		a.fetched.put(p.did, now, a.readDIDWebKeys(keyresolver.WithClient(c.Request.Context(), c.ClientIP()), p.did, now))
	}
	out := []keyJSON{}
	for _, p := range pairs {
		if k, ok := held(p); ok {
			out = append(out, k)
		}
	}
	c.JSON(http.StatusOK, gin.H{"keys": out})
}

// readDIDWebKeys reads a did:web document and returns its ed25519 keys by kid, as read at now
// (none when the document cannot be read or has none).
func (a *API) readDIDWebKeys(ctx context.Context, did string, now time.Time) map[string]*fsm.KeyRecord {
	if a.cfg.Resolver == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	doc, err := a.cfg.Resolver.Resolve(ctx, did)
	if err != nil {
		a.cfg.Logger.Debug("did:web key fetch failed", "err", err) // err names the DID, cut short
		return nil
	}
	keys := map[string]*fsm.KeyRecord{}
	for _, vm := range doc.VerificationMethod {
		k, err := keyresolver.ParseMultikey(vm.PublicKeyMultibase)
		if err != nil || k.Type != keyresolver.Ed25519 {
			continue
		}
		kid := signing.KID(ed25519.PublicKey(k.Raw))
		keys[kid] = &fsm.KeyRecord{KID: kid, PublicKey: append([]byte(nil), k.Raw...), Source: "did-document",
			RegisteredAt: now.Unix(), LastSeenAt: now.Unix()}
		if len(keys) == maxFetchedKeysPerDoc {
			break
		}
	}
	return keys
}

// signOut serves POST /api/v1/devices/sign-out {kid}: the caller retires one of its own keys.
func (a *API) signOut(c *gin.Context) {
	var body struct {
		KID string `json:"kid"`
	}
	dec := json.NewDecoder(io.LimitReader(c.Request.Body, 64<<10))
	if err := dec.Decode(&body); err != nil || body.KID == "" || len(body.KID) > 64 {
		rest.WriteError(c, http.StatusBadRequest, `body must be {"kid": "<key id>"}`)
		return
	}
	closed, revoked, err := a.cfg.Retirer.RetireKey(c.Request.Context(), rest.DID(c), body.KID)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return
		}
		rest.WriteError(c, http.StatusServiceUnavailable, "the key could not be retired; try again")
		return
	}
	c.JSON(http.StatusOK, gin.H{"ok": true, "sessions_closed": closed, "tokens_revoked": revoked})
}
