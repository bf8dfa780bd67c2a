package node

import (
	"fmt"
	"log/slog"

	"github.com/palaver-chat/palaver/gateway/discovery"
	"github.com/palaver-chat/palaver/gateway/mcp"
	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/gateway/signingapi"
	"github.com/palaver-chat/palaver/raft/fsm"
	fsmcoord "github.com/palaver-chat/palaver/raft/fsm/coord"
)

// mountAgents puts the MCP endpoint and the discovery documents on the REST server. The
// documents are derived from the contract document of every route mounted when they are first
// asked for.
func mountAgents(cfg Config, log *slog.Logger, machine *fsm.Machine, rs *rest.Server, ircAddr, tlsAddr string) error {
	var terms []byte
	if cfg.TOSFile != "" {
		var err error
		if terms, err = discovery.Terms(cfg.TOSFile); err != nil {
			return err
		}
	}
	m := mcp.New(mcp.Config{
		ServerName: cfg.ServerName, Version: cfg.Version, BaseURL: cfg.BaseURL, LimitOff: cfg.NoFloodLimits,
		Logger: log.With("component", "mcp"),
	})
	if err := m.Mount(rs); err != nil {
		return err
	}
	d, err := discovery.New(discovery.Config{
		ServerName: cfg.ServerName, BaseURL: cfg.BaseURL, Version: cfg.Version,
		IRCAddr: ircAddr, TLSAddr: tlsAddr, TLSSelfSigned: cfg.TLSCertFile == "", Terms: terms,
		Limits: discovery.Limits{
			FloodLimits: !cfg.NoFloodLimits, MaxConnsPerIP: cfg.MaxConnsPerIP, ChallengeTTL: cfg.ChallengeTTL,
			SigningKeyLifetime: cfg.SigningKeyLifetime, BatchKeyPairs: signingapi.MaxBatchPairs,
			MCP: mcp.DefaultLimit, MCPLimitsOff: cfg.NoFloodLimits, MCPBodyBytes: mcp.MaxBodyBytes,
			Coordination: fsmcoord.DefaultCoordBudget,
		},
		FreeFormSession: cfg.Assist.Configured(),
		Logger:          log.With("component", "discovery"),
		Accounts:        machine,
		Registration: discovery.Registration{Enabled: cfg.AccountRegistration.Enabled,
			BeforeConnect: cfg.AccountRegistration.BeforeConnect, PerAddressPerHour: cfg.AccountRegistration.PerAddressPerHour},
	})
	if err != nil {
		return fmt.Errorf("discovery: %w", err)
	}
	return d.Mount(rs)
}
