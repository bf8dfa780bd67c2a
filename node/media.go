package node

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/palaver-chat/palaver/federation/exchange"
	"github.com/palaver-chat/palaver/gateway/media"
	"github.com/palaver-chat/palaver/gateway/metrics"
	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/raft"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// newMedia builds the media surface (uploads, media proxies, pre-key bundles, group keys) and
// installs the cluster's capability key through Raft when there is none yet. Start mounts its
// routes on the REST server and runs it; clusterPlane mounts its cluster-plane routes.
func newMedia(ctx context.Context, cfg Config, log *slog.Logger, machine *fsm.Machine, prop *proposer, rf *raft.Store,
	mset *metrics.Set, resolver *keyresolver.Resolver, serverKey ed25519.PrivateKey) (*media.Service, error) {
	opts := cfg.Media
	if opts.Dir == "" {
		opts.Dir = filepath.Join(cfg.DataDir, "media")
	}
	mcfg := media.Config{
		Options: opts, Node: cfg.NodeName, BaseURL: cfg.BaseURL, State: machine,
		Proposer: prop, Levels: rf, Linearize: readIndex{rf}.wait, Registerer: mset.Registry,
		PDS: pdsResolver{resolver}, OperDIDs: cfg.OperDIDs, Logger: log.With("component", "media"),
	}
	if client := rf.ClusterHTTPClient(); client != nil {
		// Uploads are up to 12 MB: the exchange client's 10 s bound is too tight on a slow link.
		c := *client
		c.Timeout = 2 * time.Minute
		mcfg.Holders = &holders{raft: rf, client: &c, key: serverKey, did: serverDID(cfg)}
	}
	svc, err := media.New(mcfg)
	if err != nil {
		return nil, err
	}
	keyCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := svc.EnsureKey(keyCtx); err != nil {
		return nil, err
	}
	if mcfg.Holders != nil {
		rf.OnMembership(mediaRepair{svc}.changed) // copies lost with a removed node
	}
	return svc, nil
}

// mountMediaInternal adds the routes through which the other nodes read this node's copies of
// uploads and send it theirs: as on the exchange's routes, from a server of the configuration,
// over its own connection, whose request its server key signed.
func mountMediaInternal(e *gin.Engine, svc *media.Service, auth clusterAuth, keys serverKeys) {
	svc.MountInternal(e, mediaPeers{auth, keys}.check)
}

// mediaPeers checks a cluster-plane media request.
type mediaPeers struct {
	auth clusterAuth
	keys serverKeys
}

func (m mediaPeers) check(r *http.Request) error {
	peer, err := m.auth.peer(r)
	if err != nil {
		return err
	}
	signer, _, err := exchange.VerifyRequest(r.Header, m.keys.of, r.Method, r.URL.RequestURI(), nil, time.Now())
	if err != nil {
		return fmt.Errorf("media request: %w", err)
	}
	if signer != peer {
		return fmt.Errorf("media request signed by %s over %s's connection", signer, peer)
	}
	return nil
}

// mediaRepair has the media service look again for uploads with too few copies.
type mediaRepair struct{ svc *media.Service }

func (m mediaRepair) changed([]raft.Member) { m.svc.Kick() }

// holders reads uploads from the nodes that hold them and sends them copies, over the cluster
// plane; each request is signed with this node's server key.
type holders struct {
	raft   *raft.Store
	client *http.Client
	key    ed25519.PrivateKey
	did    string
}

// Servers lists the servers of the Raft configuration.
func (h *holders) Servers() []string {
	var out []string
	for _, m := range h.raft.Members() {
		if m.Suffrage != raft.NotInConfiguration {
			out = append(out, m.NodeID)
		}
	}
	return out
}

// Alive reports whether gossip sees node alive.
func (h *holders) Alive(node string) bool {
	for _, m := range h.raft.Members() {
		if m.NodeID == node {
			return m.State == raft.MemberAlive
		}
	}
	return false
}

func (h *holders) FetchHeld(ctx context.Context, node, id, rangeHeader string) (*http.Response, error) {
	req, err := h.request(ctx, http.MethodGet, node, id, nil)
	if err != nil {
		return nil, err
	}
	if rangeHeader != "" {
		req.Header.Set("Range", rangeHeader)
	}
	return h.do(req, node)
}

func (h *holders) StoreCopy(ctx context.Context, node, id string, size int64, body io.Reader) error {
	req, err := h.request(ctx, http.MethodPut, node, id, body)
	if err != nil {
		return err
	}
	req.ContentLength = size
	resp, err := h.do(req, node)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("media copy to %s: %d %s", node, resp.StatusCode, msg)
	}
	return nil
}

// request builds a signed request for an object's route on node, a live member.
func (h *holders) request(ctx context.Context, method, node, id string, body io.Reader) (*http.Request, error) {
	addr := ""
	for _, m := range h.raft.Members() {
		if m.NodeID == node && m.State == raft.MemberAlive {
			addr = m.ClusterAddr
		}
	}
	if addr == "" {
		return nil, fmt.Errorf("node %s is not a live member", node)
	}
	req, err := http.NewRequestWithContext(ctx, method, "https://"+addr+"/internal/v1/media/"+id, body)
	if err != nil {
		return nil, fmt.Errorf("media request to %s: %w", node, err)
	}
	exchange.SignRequest(req.Header, h.key, h.did, method, req.URL.RequestURI(), nil, time.Now())
	return req, nil
}

func (h *holders) do(req *http.Request, node string) (*http.Response, error) {
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("media request to %s: %w", node, err)
	}
	return resp, nil
}

// pdsResolver finds a DID's PDS through its DID document.
type pdsResolver struct{ r *keyresolver.Resolver }

func (p pdsResolver) PDS(ctx context.Context, did string) (string, error) {
	doc, err := p.r.Resolve(ctx, did)
	if err != nil {
		return "", err
	}
	pds, ok := doc.PDSEndpoint()
	if !ok {
		return "", fmt.Errorf("%s names no PDS", did)
	}
	return pds, nil
}
