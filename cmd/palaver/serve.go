package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/palaver-chat/palaver/federation/peering"
	"github.com/palaver-chat/palaver/node"
	"github.com/palaver-chat/palaver/raft"
)

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// serveFlags defines the flags of `palaver serve` on fs and returns a function that builds the
// node configuration once fs is parsed. Every flag can also be set through the environment as
// PALAVER_<FLAG NAME IN UPPER CASE WITH _ FOR ->; the command line wins.
//
// Every default is node.DefaultConfig's: a flag's default is the field's.
func serveFlags(fs *flag.FlagSet) (build func() (node.Config, slog.Level, error)) {
	cfg := node.DefaultConfig()
	cfg.Coord.Flags(fs)
	cfg.Assist.Flags(fs)
	cfg.AV.Flags(fs)
	var opers, operDIDs, origins, join, trustedProxies listFlag
	var logLevel string
	fs.StringVar(&cfg.ServerName, "server-name", cfg.ServerName, "IRC server name; also the node's did:web host name")
	fs.StringVar(&cfg.NodeName, "node-name", cfg.NodeName, "Raft node name (default: the server name)")
	fs.StringVar(&cfg.DataDir, "data", cfg.DataDir, "data directory (raft log and snapshots, event store, TLS certificate)")
	fs.StringVar(&cfg.IRCAddr, "irc-addr", cfg.IRCAddr, "plain IRC listen address (empty disables)")
	fs.StringVar(&cfg.TLSAddr, "tls-addr", cfg.TLSAddr, "IRC over TLS listen address (empty disables)")
	fs.StringVar(&cfg.HTTPAddr, "http-addr", cfg.HTTPAddr, "HTTP listen address: REST API under /api/v1 and IRC over WebSocket at /irc")
	fs.StringVar(&cfg.RaftAddr, "raft-addr", cfg.RaftAddr, "Raft transport listen address")
	fs.StringVar(&cfg.BaseURL, "base-url", cfg.BaseURL, "public URL of the HTTP server (default: http://<http-addr>)")
	fs.Var(&join, "join", "gossip address host:port of any member of the cluster to join (repeatable); empty: bootstrap or restart alone")
	fs.StringVar(&cfg.ClusterSecret, "cluster-secret", cfg.ClusterSecret, "the cluster's secret `FILE` (its CAs and gossip keys; see palaver cluster secret), to enrol this node (<data>/cluster/node): required with --join until it has; default for a clustered node without --join: <data>/cluster/secret when present, created by the first node")
	fs.StringVar(&cfg.GossipAddr, "gossip-addr", cfg.GossipAddr, "memberlist bind address; setting it makes the node clustered (e.g. 127.0.0.1:6671)")
	fs.StringVar(&cfg.GossipAdvertise, "gossip-advertise", cfg.GossipAdvertise, "gossip address other nodes use, when --gossip-addr is not reachable as is")
	fs.StringVar(&cfg.ClusterAddr, "cluster-addr", cfg.ClusterAddr, "cluster listener (mutual TLS): the cluster RPC for forwarded writes and read-index requests, and the event exchange between nodes (e.g. 127.0.0.1:6672)")
	fs.StringVar(&cfg.ClusterAdvertise, "cluster-advertise", cfg.ClusterAdvertise, "cluster listener address other nodes dial, when --cluster-addr is not reachable as is")
	fs.StringVar(&cfg.RaftAdvertise, "raft-advertise", cfg.RaftAdvertise, "Raft address other nodes dial, when --raft-addr is not reachable as is")
	raftProfile := raft.ProfileProduction
	fs.StringVar(&raftProfile, "raft-profile", raftProfile, "Raft timing profile: "+strings.Join(raft.ProfileNames(), ", ")+"; the --raft-*-timeout flags override single values of it")
	commit, heartbeat, election := timingFlag{d: cfg.Raft.CommitTimeout}, timingFlag{d: cfg.Raft.HeartbeatTimeout}, timingFlag{d: cfg.Raft.ElectionTimeout}
	fs.Var(&commit, "raft-commit-timeout", "how long an idle Raft leader waits before sending followers the new commit index; shorter makes a change made on a follower visible sooner everywhere, at the cost of more idle traffic (see BENCHMARKS.md, B8; default: the profile's)")
	fs.Var(&heartbeat, "raft-heartbeat-timeout", "how long a follower goes without hearing from the leader before it calls an election; shorter fails over sooner after a leader dies, longer tolerates slower links (see BENCHMARKS.md, B10; default: the profile's)")
	fs.Var(&election, "raft-election-timeout", "how long a candidate waits for votes before it tries again; raised to the heartbeat timeout when shorter (default: the profile's)")
	fs.IntVar(&cfg.MaxVoters, "max-voters", cfg.MaxVoters, "Raft voters the leader keeps: 3 or 5; further nodes join as non-voters")
	fs.DurationVar(&cfg.DeadNodeGrace, "dead-node-grace", cfg.DeadNodeGrace, "how long a node may stay dead before the leader removes it and ends its sessions")
	fs.StringVar(&cfg.TLSCertFile, "tls-cert", cfg.TLSCertFile, "TLS certificate file (PEM); default: a self-signed certificate generated in <data>/tls")
	fs.StringVar(&cfg.TLSKeyFile, "tls-key", cfg.TLSKeyFile, "TLS private key file (PEM)")
	fs.StringVar(&cfg.ServerInfo, "server-info", cfg.ServerInfo, "description of the node in IRC LINKS (at most 64 bytes)")
	fs.StringVar(&cfg.MOTDFile, "motd", cfg.MOTDFile, "file with the message of the day (none: clients get 422 ERR_NOMOTD)")
	fs.StringVar(&cfg.TOSFile, "tos", cfg.TOSFile, "file with the terms of service served at /tos (plain UTF-8 text; default: the built-in terms)")
	fs.Var(&opers, "oper", "server operator as name:bcrypt-hash for OPER (repeatable); a plain password still works but shows in ps and is warned about: prefer --oper-file or PALAVER_OPER")
	var operFile string
	fs.StringVar(&operFile, "oper-file", "", "file of server operators for OPER, one name:bcrypt-hash a line (# comments)")
	fs.Var(&operDIDs, "oper-did", "DID that becomes a server operator when it authenticates (repeatable)")
	fs.BoolVar(&cfg.NoGuests, "no-guest", cfg.NoGuests, "refuse unauthenticated registrations")
	fs.BoolVar(&cfg.AccountRegistration.Enabled, "account-registration", cfg.AccountRegistration.Enabled, "let people without a DID register a hosted account (did:web:<server>:u:<name>) with IRC REGISTER")
	fs.BoolVar(&cfg.AccountRegistration.BeforeConnect, "account-registration-before-connect", cfg.AccountRegistration.BeforeConnect, "accept REGISTER before the connection's IRC registration completes")
	fs.IntVar(&cfg.AccountRegistration.PerAddressPerHour, "account-registration-per-hour", cfg.AccountRegistration.PerAddressPerHour, "hosted accounts one client address (IPv6 per /64) may register per hour on one node")
	fs.IntVar(&cfg.AccountRegistration.MinPassword, "account-registration-min-password", cfg.AccountRegistration.MinPassword, "shortest password REGISTER accepts, in bytes (at most 400)")
	relay := &cfg.AccountRegistration.Email.Relay
	fs.StringVar(&relay.Addr, "account-registration-smtp", relay.Addr, "SMTP relay (host:port) that mails registration codes: REGISTER then needs an e-mail address, and VERIFY with the mailed code creates the account")
	fs.StringVar(&relay.From, "account-registration-smtp-from", relay.From, "sender address of the registration e-mails")
	fs.StringVar(&relay.Username, "account-registration-smtp-user", relay.Username, "user name of the SMTP relay's login (AUTH PLAIN, over TLS or to loopback only)")
	fs.StringVar(&cfg.SMTPPasswordFile, "account-registration-smtp-password-file", cfg.SMTPPasswordFile, "file whose first line is the SMTP relay's password")
	fs.StringVar(&relay.TLS, "account-registration-smtp-tls", relay.TLS, "TLS to the SMTP relay: starttls (required), tls (implicit, port 465) or none (a relay on loopback or a trusted network)")
	fs.StringVar(&cfg.SMTPCAFile, "account-registration-smtp-ca-file", cfg.SMTPCAFile, "PEM file of the CAs the SMTP relay's certificate is checked against (default: the system's)")
	fs.DurationVar(&cfg.AccountRegistration.Email.CodeTTL, "account-registration-code-ttl", cfg.AccountRegistration.Email.CodeTTL, "how long a mailed registration code stays valid (1m to 24h)")
	fs.IntVar(&cfg.AccountRegistration.Email.MaxAttempts, "account-registration-code-attempts", cfg.AccountRegistration.Email.MaxAttempts, "wrong codes that end a registration awaiting its code (1 to 20)")
	fs.BoolVar(&cfg.Metadata3, "irc-metadata-3", cfg.Metadata3, "offer draft/metadata-3 beside draft/metadata-2 (CAP LS then spans two lines, which freeq's JavaScript SDK does not negotiate)")
	fs.BoolVar(&cfg.Rejoin, "rejoin", cfg.Rejoin, "rejoin an IRC connection that logs in as an account to the channels its sessions were in when they ended (see docs/accounts.md)")
	fs.DurationVar(&cfg.RejoinMaxAge, "rejoin-max-age", cfg.RejoinMaxAge, "how long the channels of an account's ended sessions are remembered for --rejoin")
	fs.StringVar(&cfg.IRCPasswordFile, "irc-password-file", cfg.IRCPasswordFile, "file whose first line is the connection password every IRC client must send with PASS before registering")
	fs.StringVar(&cfg.PLCDirectory, "plc-directory", cfg.PLCDirectory, "did:plc directory URL")
	fs.DurationVar(&cfg.ChallengeTTL, "challenge-timeout", cfg.ChallengeTTL, "SASL challenge lifetime (at most 60s)")
	fs.IntVar(&cfg.MaxConnsPerIP, "max-conns-per-ip", cfg.MaxConnsPerIP, "concurrent IRC connections per client IP (IPv6 per /64), all transports (-1 = unlimited)")
	fs.IntVar(&cfg.MaxHTTPConnsPerIP, "max-http-conns-per-ip", cfg.MaxHTTPConnsPerIP, "concurrent HTTP connections (WebSockets included) per client IP, IPv6 per /64; more are closed at accept (0 = default: 64, or --max-conns-per-ip + 32 when more, unlimited when that is -1; -1 = unlimited)")
	fs.Var(&trustedProxies, "trusted-proxy", "reverse proxy (IP or CIDR) whose X-Real-IP / X-Forwarded-For name the HTTP client (repeatable); without it those headers are ignored, from loopback too")
	fs.Var(&origins, "allowed-origin", "extra origin allowed by CORS and WebSocket checks, e.g. https://chat.example.org (repeatable); CORS always allows localhost, WebSocket only when the node listens on loopback with a local --base-url")
	fs.IntVar(&cfg.JoinHistory, "join-history", cfg.JoinHistory, "messages replayed to a client when it joins a channel (0 or -1: none)")
	tagmsgPersist := strings.Join(cfg.TagmsgPersist, ",")
	fs.StringVar(&tagmsgPersist, "tagmsg-persist", tagmsgPersist, "comma-separated client tags that keep a TAGMSG in history, replayed to draft/event-playback clients only (empty: none)")
	fs.BoolVar(&cfg.NoFloodLimits, "no-flood-limits", cfg.NoFloodLimits, "BENCHMARKS ONLY: turn off per-connection flood limits")
	const day = 24 * time.Hour
	keyLifetimeDays, peerKeyRetrySecs := int(cfg.SigningKeyLifetime/day), int(cfg.PeerKeyRetry/time.Second)
	fs.IntVar(&peerKeyRetrySecs, "peer-key-retry-secs", peerKeyRetrySecs, "seconds before a did:web document that lacked a key is asked again")
	fs.IntVar(&keyLifetimeDays, "signing-key-lifetime-days", keyLifetimeDays, "days a client's MSGSIG signing key counts after registration")
	unownedExpiryDays, foundedExpiryDays := int(cfg.UnownedChannelExpiry/day), int(cfg.FoundedChannelExpiry/day)
	fs.IntVar(&unownedExpiryDays, "channel-expiry-days", unownedExpiryDays, "days an empty channel without a founder is kept (-1 keeps it)")
	fs.IntVar(&foundedExpiryDays, "founded-channel-expiry-days", foundedExpiryDays, "days an empty channel with a founder is kept (-1 keeps it)")
	fs.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&cfg.PprofAddr, "pprof-addr", cfg.PprofAddr, "serve runtime profiles (net/http/pprof) and the replica's state hash (/debug/palaver/state) on this address, e.g. 127.0.0.1:6060; keep it private")
	var peers, peerTrust, links listFlag
	fs.Var(&peers, "peer", "federation peer as did:web:<name>=<base URL> (repeatable)")
	fs.Var(&peerTrust, "peer-trust", "a peer's trust level as did:web:<name>=full|relay|readonly (repeatable; default relay)")
	fs.Var(&links, "link-channel", "channel linked with a peer as #channel=did:web:<name> (repeatable; linked only when both servers configure it)")
	cfg.Media.Flags(fs)
	fs.BoolVar(&cfg.PeerAllowPrivate, "peer-allow-private", cfg.PeerAllowPrivate, "let federation reach configured peers at private and loopback addresses (the SSRF guard refuses them by default)")
	fs.String("config", "", "configuration file of `name = value` lines (flag names without dashes)")
	return func() (node.Config, slog.Level, error) {
		if err := applyEnv(fs); err != nil {
			return cfg, 0, err
		}
		var level slog.Level
		var err error
		if err := level.UnmarshalText([]byte(logLevel)); err != nil {
			return cfg, 0, fmt.Errorf("--log-level: %w", err)
		}
		cfg.TagmsgPersist = nil
		for _, tag := range strings.Split(tagmsgPersist, ",") {
			if tag = strings.TrimSpace(tag); tag != "" {
				cfg.TagmsgPersist = append(cfg.TagmsgPersist, tag)
			}
		}
		if cfg.Opers, err = operCredentials(opers, operFile); err != nil {
			return cfg, 0, err
		}
		if keyLifetimeDays < 1 {
			return cfg, 0, fmt.Errorf("--signing-key-lifetime-days %d: must be at least 1", keyLifetimeDays)
		}
		cfg.SigningKeyLifetime = time.Duration(keyLifetimeDays) * day
		for _, e := range []struct {
			flag string
			days int
			dst  *time.Duration
		}{{"channel-expiry-days", unownedExpiryDays, &cfg.UnownedChannelExpiry}, {"founded-channel-expiry-days", foundedExpiryDays, &cfg.FoundedChannelExpiry}} {
			if e.days == 0 || e.days < -1 {
				return cfg, 0, fmt.Errorf("--%s %d: must be at least 1, or -1 to keep empty channels", e.flag, e.days)
			}
			*e.dst = time.Duration(e.days) * day
		}
		if cfg.Raft, err = raftTiming(raftProfile, commit, heartbeat, election); err != nil {
			return cfg, 0, err
		}
		if peerKeyRetrySecs < 1 {
			return cfg, 0, fmt.Errorf("--peer-key-retry-secs %d: must be at least 1", peerKeyRetrySecs)
		}
		cfg.PeerKeyRetry = time.Duration(peerKeyRetrySecs) * time.Second
		if err := federationFlags(&cfg, peers, peerTrust, links); err != nil {
			return cfg, 0, err
		}
		cfg.OperDIDs = operDIDs
		cfg.Join = join
		cfg.AllowedOrigins = origins
		cfg.TrustedProxies = trustedProxies
		cfg.Version = version
		return cfg, level, nil
	}
}

// timingFlag is a --raft-*-timeout flag: set, it overrides one value of the Raft timing profile.
type timingFlag struct {
	d   time.Duration
	set bool
}

func (f *timingFlag) String() string { return f.d.String() }

func (f *timingFlag) Set(v string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return err
	}
	f.d, f.set = d, true
	return nil
}

// raftTiming is the named profile with the --raft-*-timeout flags that were set applied to it,
// the election timeout and the lease then following the heartbeat timeout (raft.Timing.Adjusted).
func raftTiming(profile string, commit, heartbeat, election timingFlag) (raft.Timing, error) {
	t, err := raft.Profile(profile)
	if err != nil {
		return t, fmt.Errorf("--raft-profile: %w", err)
	}
	for _, o := range []struct {
		f   timingFlag
		dst *time.Duration
	}{{commit, &t.CommitTimeout}, {heartbeat, &t.HeartbeatTimeout}, {election, &t.ElectionTimeout}} {
		if o.f.set {
			*o.dst = o.f.d
		}
	}
	return t.Adjusted(), nil
}

// applyEnv sets every flag not given on the command line from PALAVER_<NAME>, and then every flag
// still unset from the configuration file named by --config (or PALAVER_CONFIG): lines of
// `name = value` (the flag's name without dashes), `#` comments and blank lines. The command line
// wins over the environment, which wins over the file.
func applyEnv(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if err := applyEnvOnly(fs, given); err != nil {
		return err
	}
	path := ""
	if f := fs.Lookup("config"); f != nil {
		path = f.Value.String()
	}
	if path == "" {
		return nil
	}
	return applyConfigFile(fs, path, given)
}

// applyConfigFile sets flags from a `name = value` file, skipping those already given.
func applyConfigFile(fs *flag.FlagSet, path string, given map[string]bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	for i, raw := range strings.Split(string(data), "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		name, value = strings.TrimSpace(name), strings.Trim(strings.TrimSpace(value), `"`)
		if !ok || name == "" {
			return fmt.Errorf("config file %s:%d: want name = value", path, i+1)
		}
		f := fs.Lookup(name)
		if f == nil || name == "config" {
			return fmt.Errorf("config file %s:%d: unknown setting %q", path, i+1, name)
		}
		if given[name] {
			continue
		}
		if err := f.Value.Set(value); err != nil {
			return fmt.Errorf("config file %s:%d: %s: %w", path, i+1, name, err)
		}
	}
	return nil
}

// applyEnvOnly sets every flag not given on the command line from PALAVER_<NAME>.
func applyEnvOnly(fs *flag.FlagSet, given map[string]bool) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || err != nil {
			return
		}
		key := "PALAVER_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		v, ok := os.LookupEnv(key)
		if !ok {
			return
		}
		if _, repeatable := f.Value.(*listFlag); repeatable {
			for _, item := range strings.Split(v, ",") {
				if item = strings.TrimSpace(item); item != "" {
					if err = f.Value.Set(item); err != nil {
						return
					}
				}
			}
			given[f.Name] = true // the file does not add to a list the environment set
			return
		}
		if e := f.Value.Set(v); e != nil {
			err = fmt.Errorf("%s: %w", key, e)
			return
		}
		given[f.Name] = true
	})
	return err
}

func runServe(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	build := serveFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	cfg, level, err := build()
	if err != nil {
		fmt.Fprintln(stderr, "palaver serve:", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	n, err := node.Start(ctx, cfg, logger)
	if err != nil {
		fmt.Fprintln(stderr, "palaver serve:", err)
		return 1
	}
	<-ctx.Done()
	logger.Info("shutting down")
	if err := n.Close(); err != nil {
		fmt.Fprintln(stderr, "palaver serve: shutdown:", err)
		return 1
	}
	return 0
}

// federationFlags reads --peer, --peer-trust and --link-channel into cfg.
func federationFlags(cfg *node.Config, peers, trust, links []string) error {
	for _, raw := range peers {
		p, err := peering.ParsePeer(raw)
		if err != nil {
			return fmt.Errorf("--peer: %w", err)
		}
		cfg.Peers = append(cfg.Peers, p)
	}
	levels := map[string]peering.Trust{}
	for _, raw := range trust {
		did, t, err := peering.ParsePeerTrust(raw)
		if err != nil {
			return fmt.Errorf("--peer-trust: %w", err)
		}
		levels[did] = t
	}
	if err := peering.ApplyTrust(cfg.Peers, levels); err != nil {
		return err
	}
	for _, raw := range links {
		l, err := peering.ParseLink(raw)
		if err != nil {
			return fmt.Errorf("--link-channel: %w", err)
		}
		cfg.Links = append(cfg.Links, l)
	}
	return nil
}
