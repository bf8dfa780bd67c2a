package signingapi

import (
	"context"
	"crypto/ed25519"
	_ "embed"
	"fmt"
	"log/slog"
	"time"

	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/keyresolver"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/signing"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// State is the read side of the replicated state.
type State interface{ Read(func(*fsm.State)) }

// Proposer submits commands to the replicated log.
type Proposer interface {
	Propose(ctx context.Context, cmd fsm.Command) (fsm.Result, error)
}

// Messages is the part of the event store these routes read.
type Messages interface {
	Get(ctx context.Context, msgid string) (eventstore.Message, error)
}

// Retirer ends the sessions signing with a retired key (the IRC edge).
type Retirer interface {
	RetireKey(ctx context.Context, did, kid string) (sessionsClosed, tokensRevoked int, err error)
}

// Config wires the routes to the node.
type Config struct {
	ServerName string
	BaseURL    string
	ServerKey  ed25519.PrivateKey
	State      State
	Proposer   Proposer
	Messages   Messages
	Retirer    Retirer
	Resolver   *keyresolver.Resolver
	// PeerKeyRetry is how long a did:web document that lacked a key is not asked again (0: it is
	// asked every time). The node's value is node.DefaultConfig's unless configured.
	PeerKeyRetry time.Duration
	Logger       *slog.Logger
	Now          func() time.Time
}

// API serves the signing routes.
type API struct {
	cfg Config
	pub ed25519.PublicKey
	kid string
	// fetched holds the keys of did:web documents read for the batch lookup (fetched.go).
	fetched *fetchedKeys
	// verified remembers signature checks: a message verified again and again (GET verify of a
	// popular message) costs a digest, not an ed25519 verification. Key state is still read each time.
	verified *signing.VerifyCache
	// answers keeps encoded verify answers (see answerCache).
	answers answerCache
}

// New builds the API.
func New(cfg Config) *API {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	pub := cfg.ServerKey.Public().(ed25519.PublicKey)
	return &API{cfg: cfg, pub: pub, kid: signing.KID(pub), verified: signing.NewVerifyCache(1 << 16),
		fetched: newFetchedKeys(maxFetchedDIDs)}
}

// ServerDID is did:web:<server name>.
func (a *API) ServerDID() string { return "did:web:" + a.cfg.ServerName }

//go:embed openapi.yaml
var contractFragment []byte

// Mount registers the routes on the REST server and describes them in its contract document. The
// batch key route shares the record routes' rate limiter.
func (a *API) Mount(s *rest.Server) error {
	e := s.Engine()
	e.GET("/api/v1/signing-key", a.signingKey)
	e.GET("/.well-known/did.json", a.didDocument)
	e.GET("/api/v1/signing-keys", s.RateLimit(rest.RecordRoutes), a.batchKeys)
	e.GET("/api/v1/signing-keys/:did", a.keysByDID)
	e.GET("/api/v1/signing-keys/:did/:kid", a.keyByKID)
	e.GET("/api/v1/verify/:msgid", s.OptionalBearer(), a.verify)
	e.POST("/api/v1/devices/sign-out", s.RequireBearer(), a.signOut)
	if err := s.DescribeRoutes(contractFragment); err != nil {
		return fmt.Errorf("signing routes: %w", err)
	}
	return nil
}
