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

	"github.com/palaver-chat/palaver/node"
)

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// serveFlags defines the flags of `palaver serve` on fs and returns a function that builds the
// node configuration once fs is parsed. Every flag can also be set through the environment as
// PALAVER_<FLAG NAME IN UPPER CASE WITH _ FOR ->; the command line wins.
func serveFlags(fs *flag.FlagSet) (build func() (node.Config, slog.Level, error)) {
	var cfg node.Config
	var opers, operDIDs, origins listFlag
	var logLevel string
	fs.StringVar(&cfg.ServerName, "server-name", "localhost", "IRC server name; also the node's did:web host name")
	fs.StringVar(&cfg.NodeName, "node-name", "", "Raft node name (default: the server name)")
	fs.StringVar(&cfg.DataDir, "data", "./data", "data directory (raft log and snapshots, event store, TLS certificate)")
	fs.StringVar(&cfg.IRCAddr, "irc-addr", "127.0.0.1:6667", "plain IRC listen address (empty disables)")
	fs.StringVar(&cfg.TLSAddr, "tls-addr", "127.0.0.1:6697", "IRC over TLS listen address (empty disables)")
	fs.StringVar(&cfg.HTTPAddr, "http-addr", "127.0.0.1:8080", "HTTP listen address: REST API under /api/v1 and IRC over WebSocket at /irc")
	fs.StringVar(&cfg.RaftAddr, "raft-addr", "127.0.0.1:6670", "Raft transport listen address")
	fs.StringVar(&cfg.BaseURL, "base-url", "", "public URL of the HTTP server (default: http://<http-addr>)")
	fs.StringVar(&cfg.TLSCertFile, "tls-cert", "", "TLS certificate file (PEM); default: a self-signed certificate generated in <data>/tls")
	fs.StringVar(&cfg.TLSKeyFile, "tls-key", "", "TLS private key file (PEM)")
	fs.StringVar(&cfg.MOTDFile, "motd", "", "file with the message of the day")
	fs.Var(&opers, "oper", "server operator as name:password for OPER (repeatable)")
	fs.Var(&operDIDs, "oper-did", "DID that becomes a server operator when it authenticates (repeatable)")
	fs.BoolVar(&cfg.NoGuests, "no-guest", false, "refuse unauthenticated registrations")
	fs.StringVar(&cfg.PLCDirectory, "plc-directory", "https://plc.directory", "did:plc directory URL")
	fs.DurationVar(&cfg.ChallengeTTL, "challenge-timeout", 60*time.Second, "SASL challenge lifetime (at most 60s)")
	fs.IntVar(&cfg.MaxConnsPerIP, "max-conns-per-ip", 20, "concurrent IRC connections per client IP, all transports (0 = default 20, -1 = unlimited)")
	fs.Var(&origins, "allowed-origin", "extra origin allowed by CORS and WebSocket checks, e.g. https://chat.example.org (repeatable); localhost and 127.0.0.1 are always allowed")
	fs.IntVar(&cfg.JoinHistory, "join-history", 25, "messages replayed to a client when it joins a channel (-1 disables)")
	fs.BoolVar(&cfg.NoFloodLimits, "no-flood-limits", false, "BENCHMARKS ONLY: turn off per-connection flood limits")
	var keyLifetimeDays, peerKeyRetrySecs int
	fs.IntVar(&peerKeyRetrySecs, "peer-key-retry-secs", 60, "seconds before a did:web document that lacked a key is asked again")
	fs.IntVar(&keyLifetimeDays, "signing-key-lifetime-days", 90, "days a client's MSGSIG signing key counts after registration")
	fs.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	return func() (node.Config, slog.Level, error) {
		if err := applyEnv(fs); err != nil {
			return cfg, 0, err
		}
		var level slog.Level
		if err := level.UnmarshalText([]byte(logLevel)); err != nil {
			return cfg, 0, fmt.Errorf("--log-level: %w", err)
		}
		cfg.Opers = map[string]string{}
		for _, o := range opers {
			name, pass, ok := strings.Cut(o, ":")
			if !ok || name == "" || pass == "" {
				return cfg, 0, fmt.Errorf("--oper %q: want name:password", o)
			}
			cfg.Opers[name] = pass
		}
		if keyLifetimeDays < 1 {
			return cfg, 0, fmt.Errorf("--signing-key-lifetime-days %d: must be at least 1", keyLifetimeDays)
		}
		cfg.SigningKeyLifetime = time.Duration(keyLifetimeDays) * 24 * time.Hour
		if peerKeyRetrySecs < 1 {
			return cfg, 0, fmt.Errorf("--peer-key-retry-secs %d: must be at least 1", peerKeyRetrySecs)
		}
		cfg.PeerKeyRetry = time.Duration(peerKeyRetrySecs) * time.Second
		cfg.OperDIDs = operDIDs
		cfg.AllowedOrigins = origins
		cfg.Version = version
		return cfg, level, nil
	}
}

// applyEnv sets every flag not given on the command line from PALAVER_<NAME>.
func applyEnv(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
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
			return
		}
		if e := f.Value.Set(v); e != nil {
			err = fmt.Errorf("%s: %w", key, e)
		}
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
