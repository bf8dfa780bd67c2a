package irc_test

// The harness of the black-box IRC tests: each test starts real nodes (testcluster/nodetest) and
// talks to them over real sockets with the helpers of testcluster/irctest, named here as the tests
// of package node name them, so a test file moves between the two with its package clause.

import (
	"testing"

	"github.com/palaver-chat/palaver/node"
	"github.com/palaver-chat/palaver/testcluster/ircclient"
	"github.com/palaver-chat/palaver/testcluster/irctest"
	"github.com/palaver-chat/palaver/testcluster/nodetest"
	"github.com/palaver-chat/palaver/testcluster/poll"
)

// Node and Config are the node's types under the names the IRC tests use.
type (
	Node   = node.Node
	Config = node.Config
)

// startNode starts a real node on loopback ports (IRC over TLS too) with its data in dir, closed
// when t ends.
func startNode(t *testing.T, dir string, mutate func(*Config)) *Node {
	t.Helper()
	return nodetest.StartIn(t, dir, func(cfg *Config) {
		cfg.TLSAddr = "127.0.0.1:0"
		if mutate != nil {
			mutate(cfg)
		}
	})
}

// startCluster starts three clustered nodes on loopback: the first bootstraps, the others join it.
func startCluster(t *testing.T) []*Node {
	t.Helper()
	return startNamedCluster(t, "test", nil)
}

// startNamedCluster starts nodes node-a.<domain>, node-b.<domain> and node-c.<domain>, each
// configured by extra (when set) before it is made clustered, and waits for three live voters.
func startNamedCluster(t *testing.T, domain string, extra func(*Config)) []*Node {
	t.Helper()
	return nodetest.StartCluster(t, domain, func(c *Config) {
		c.TLSAddr = "127.0.0.1:0"
		if extra != nil {
			extra(c)
		}
	})
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
