package node

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/palaver-chat/palaver/federation/peering"
	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/sfu"
)

// Config is everything a node needs to start. The zero value plus Defaults is the embedded
// single-node default that `make run` starts.
type Config struct {
	ServerName string // IRC server name and did:web host name
	NodeName   string // Raft server id; defaults to ServerName
	DataDir    string

	IRCAddr  string // plain IRC; empty disables
	TLSAddr  string // IRC over TLS; empty disables
	HTTPAddr string // REST API and IRC over WebSocket at /irc
	RaftAddr string // Raft transport
	BaseURL  string // public URL of the HTTP server; default http://<HTTPAddr>
	// RaftCommitTimeout is how long an idle Raft leader waits before telling followers the new
	// commit index (raft.Config.CommitTimeout; zero: its default). Shorter: a change made on a
	// follower is seen sooner everywhere, at the cost of more empty appends on an idle cluster.
	RaftCommitTimeout time.Duration
	// RaftHeartbeatTimeout and RaftElectionTimeout bound how long followers go without hearing
	// from a leader before they elect another (zero: raft package defaults); shorter fails over
	// sooner after a leader dies, at the risk of needless elections on a starved machine.
	RaftHeartbeatTimeout, RaftElectionTimeout time.Duration
	// PprofAddr, when set, serves net/http/pprof on a listener of its own (keep it on loopback).
	PprofAddr string

	TLSCertFile, TLSKeyFile string // when empty, a self-signed certificate is generated in DataDir/tls

	// Clustering. With Join empty and no GossipAddr the node is a one-node cluster. With GossipAddr
	// set it gossips (memberlist) and serves the cluster RPC on ClusterAddr; with Join set it joins
	// the cluster of any listed member instead of bootstrapping.
	Join                    []string
	GossipAddr, ClusterAddr string
	RaftAdvertise           string
	GossipAdvertise         string
	ClusterAdvertise        string
	// ClusterSecret is the cluster secret file (raft/trust): the cluster's CAs and gossip keys.
	// Required with Join; without it a clustered node uses <DataDir>/cluster/secret, creating it
	// when missing (the first node of a cluster). Unused by an unclustered node.
	ClusterSecret string
	MaxVoters     int           // 3 (default) or 5
	DeadNodeGrace time.Duration // default 60 s

	MOTDFile string
	TOSFile  string            // terms of service served at /tos; empty: the built-in terms
	Opers    map[string]string // OPER name → password
	OperDIDs []string
	NoGuests bool

	PLCDirectory    string
	ChallengeTTL    time.Duration
	MaxConnsPerIP   int
	AllowedOrigins  []string
	JoinHistory     int
	NoFloodLimits   bool // benchmarks only
	AllowPrivateDID bool // tests only: let did:web and PDS lookups reach loopback and private addresses

	// MaxHTTPConnsPerIP caps the concurrent HTTP connections of one client (an IPv4 address or
	// an IPv6 /64) on the HTTP listener, WebSockets included; over it a connection is closed at
	// accept; -1 is unlimited. WebSocket IRC connections count here too, so the default leaves
	// room for MaxConnsPerIP of them: 64, or MaxConnsPerIP + 32 when that is more, and
	// unlimited when MaxConnsPerIP is.
	MaxHTTPConnsPerIP int
	// TrustedProxies are the reverse proxies (IP or CIDR) whose X-Real-IP / X-Forwarded-For
	// name the HTTP client; from any other peer, loopback included, those headers are ignored.
	TrustedProxies []string
	// HTTPLimits bounds HTTP requests (read, header and idle timeouts, header size); zero fields
	// take rest's defaults. No flag: tests shorten them.
	HTTPLimits rest.HTTPLimits
	// AV configures calls: --no-av, the forwarding unit's UDP address and public IPs.
	AV sfu.Options

	// PeerKeyRetry is how long a did:web document that lacked a key is not asked again.
	PeerKeyRetry time.Duration
	// KeySweepEvery is how often sessions whose signing key expired are closed (default 60 s).
	KeySweepEvery time.Duration
	// SigningKeyLifetime is how long a client's MSGSIG key counts after registration.
	SigningKeyLifetime time.Duration

	Version string

	// IRC keepalive: idle time before the server pings a client, and how long it waits for the
	// answer (defaults 30 s and 60 s). SendQBytes is each connection's output budget (256 KiB).
	PingAfter, PingTimeout time.Duration
	SendQBytes             int

	// Clock replaces time.Now for SASL challenge lifetimes (tests only).
	Clock func() time.Time

	// Federation with other servers (federation/peering): the allowed peers with their trust
	// levels, the channels linked with each, and how often the outboxes look for work (default 1 s).
	Peers               []peering.Peer
	Links               []peering.Link
	FederationSendEvery time.Duration
	// PeerAllowPrivate lets federation reach configured peers at private and loopback addresses
	// (--peer-allow-private); the SSRF guard otherwise refuses them.
	PeerAllowPrivate bool

	// Empty channels expire (the leader sweeps every ChannelSweepEvery, default 1 h): unowned ones
	// after UnownedChannelExpiry (default 7 days), founded ones after FoundedChannelExpiry
	// (default 90 days); negative keeps them.
	ChannelSweepEvery, UnownedChannelExpiry, FoundedChannelExpiry time.Duration

	// Faults injects network partitions and slow disks (the testcluster harness only; nil: the
	// real network and disk). See faults.go.
	Faults *Faults
}

// Defaults fills in the embedded single-node default.
func (c *Config) Defaults() {
	if c.ServerName == "" {
		c.ServerName = "localhost"
	}
	if c.NodeName == "" {
		c.NodeName = c.ServerName
	}
	if c.DataDir == "" {
		c.DataDir = "./data"
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = "127.0.0.1:8080"
	}
	if c.RaftAddr == "" {
		c.RaftAddr = "127.0.0.1:6670"
	}
	if c.PLCDirectory == "" {
		c.PLCDirectory = "https://plc.directory"
	}
	if c.ChallengeTTL == 0 {
		c.ChallengeTTL = 60 * time.Second
	}
	if c.MaxConnsPerIP == 0 {
		c.MaxConnsPerIP = 20
	}
	if c.MaxHTTPConnsPerIP == 0 {
		switch {
		case c.MaxConnsPerIP < 0:
			c.MaxHTTPConnsPerIP = -1
		default:
			c.MaxHTTPConnsPerIP = max(64, c.MaxConnsPerIP+32)
		}
	}
	if c.PeerKeyRetry == 0 {
		c.PeerKeyRetry = 60 * time.Second
	}
	if c.SigningKeyLifetime == 0 {
		c.SigningKeyLifetime = 90 * 24 * time.Hour
	}
	if c.Version == "" {
		c.Version = "0.1.0"
	}
	if c.ChannelSweepEvery == 0 {
		c.ChannelSweepEvery = time.Hour
	}
	if c.UnownedChannelExpiry == 0 {
		c.UnownedChannelExpiry = 7 * 24 * time.Hour
	}
	if c.FoundedChannelExpiry == 0 {
		c.FoundedChannelExpiry = 90 * 24 * time.Hour
	}
}

// Validate reports the first problem with a configuration.
func (c *Config) Validate() error {
	if strings.ContainsAny(c.ServerName, " /:@!") {
		return fmt.Errorf("server name %q: must be a host name", c.ServerName)
	}
	if c.ChallengeTTL < time.Second || c.ChallengeTTL > 60*time.Second {
		return fmt.Errorf("challenge lifetime %s: must be between 1s and 60s", c.ChallengeTTL)
	}
	for name, addr := range map[string]string{"irc": c.IRCAddr, "tls": c.TLSAddr, "http": c.HTTPAddr, "raft": c.RaftAddr} {
		if addr == "" {
			if name == "http" || name == "raft" {
				return fmt.Errorf("%s address is required", name)
			}
			continue
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return fmt.Errorf("%s address %q: %w", name, addr, err)
		}
	}
	if c.IRCAddr == "" && c.TLSAddr == "" && c.HTTPAddr == "" {
		return errors.New("no listener configured")
	}
	if len(c.Join) > 0 && c.GossipAddr == "" {
		return errors.New("--join needs --gossip-addr (and --cluster-addr): a joining node gossips")
	}
	if len(c.Join) > 0 && c.ClusterSecret == "" {
		return errors.New("--join needs --cluster-secret FILE: the cluster's secret file (the first node wrote it to <its data>/cluster/secret); only nodes holding it can join")
	}
	if c.GossipAddr != "" && c.ClusterAddr == "" {
		return errors.New("--gossip-addr needs --cluster-addr for forwarded writes")
	}
	if c.MaxVoters != 0 && c.MaxVoters != 3 && c.MaxVoters != 5 {
		return fmt.Errorf("max voters %d: must be 3 or 5", c.MaxVoters)
	}
	for _, p := range c.TrustedProxies {
		if err := rest.ValidTrustedProxy(p); err != nil {
			return fmt.Errorf("--trusted-proxy: %w", err)
		}
	}
	return nil
}
