package node

// The harness of node's tests: startNode starts a real node as testcluster/nodetest does (this
// package cannot import it: it imports node); the IRC client helpers are testcluster/irctest's,
// named as the black-box IRC tests beside gateway/irc name them.

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/palaver-chat/palaver/testcluster/ircclient"
	"github.com/palaver-chat/palaver/testcluster/irctest"
	"github.com/palaver-chat/palaver/testcluster/poll"
)

// startNode starts a real node on loopback ports (IRC over TLS too) with its data in dir, closed
// when t ends.
func startNode(t *testing.T, dir string, mutate func(*Config)) *Node {
	t.Helper()
	cfg := LoopbackConfig(dir)
	cfg.TLSAddr = "127.0.0.1:0"
	if mutate != nil {
		mutate(&cfg)
	}
	level := slog.LevelError
	if os.Getenv("PALAVER_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := Start(ctx, cfg, logger)
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// The IRC client helpers (testcluster/irctest) under the names the tests use.
var (
	testCtx          = irctest.Ctx
	login            = irctest.Login
	loginAs          = irctest.LoginAs
	guest            = irctest.Guest
	challenge        = irctest.Challenge
	saslResponse     = irctest.SASLResponse
	sign             = irctest.Sign
	httpDo           = irctest.HTTPDo
	sendLines        = irctest.SendLines
	expect           = irctest.Expect
	expectFrom       = irctest.ExpectFrom
	expectParams     = irctest.ExpectParams
	expectEndOfNames = irctest.ExpectEndOfNames
	expectCapLS      = irctest.ExpectCapLS
	expectSeen       = irctest.ExpectSeen
	expectSeenParams = irctest.ExpectSeenParams
	readUntil        = irctest.ReadUntil
	drain            = irctest.Drain
	syncClient       = irctest.Sync
	joinChannels     = irctest.JoinChannels
	chanOp           = irctest.ChanOp
	batchBody        = irctest.BatchBody
	batchRest        = irctest.BatchRest
	refuteMsg        = irctest.RefuteMsg
	findMsg          = irctest.FindMsg
	isFrom           = irctest.IsFrom
	paramsContain    = irctest.ParamsContain
	commandsOf       = irctest.Commands
	texts            = irctest.Texts
	lines            = irctest.Lines
	lastSeen         = irctest.LastSeen
	sessionGone      = irctest.SessionGone
	quit             = irctest.Quit
	eventually       = poll.Until
)

// testClock is a settable clock for SASL challenge lifetimes.
type testClock = irctest.Clock

func dial(t *testing.T, n *Node) *ircclient.Client    { t.Helper(); return irctest.Dial(t, n) }
func dialTLS(t *testing.T, n *Node) *ircclient.Client { t.Helper(); return irctest.DialTLS(t, n) }
func dialWS(t *testing.T, n *Node) *ircclient.Client  { t.Helper(); return irctest.DialWS(t, n) }
func newEd25519(t *testing.T) ircclient.Signer        { t.Helper(); return irctest.NewEd25519(t) }
func newSecp256k1(t *testing.T) ircclient.Signer      { t.Helper(); return irctest.NewSecp256k1(t) }
