package node

import (
	"fmt"

	"github.com/palaver-chat/palaver/gateway/discovery"
	"github.com/palaver-chat/palaver/gateway/mcp"
	"github.com/palaver-chat/palaver/gateway/signingapi"
	fsmcoord "github.com/palaver-chat/palaver/raft/fsm/coord"
)

// mountAgentSurfaces puts the MCP endpoint and the discovery documents on the REST server. The
// documents are derived from the contract document of every route mounted when they are first
// asked for.
func (n *Node) mountAgentSurfaces() error {
	cfg := n.cfg
	var terms []byte
	if cfg.TOSFile != "" {
		var err error
		if terms, err = discovery.Terms(cfg.TOSFile); err != nil {
			return err
		}
	}
	m := mcp.New(mcp.Config{
		ServerName: cfg.ServerName, Version: cfg.Version, BaseURL: cfg.BaseURL, LimitOff: cfg.NoFloodLimits,
		Logger: n.log.With("component", "mcp"),
	})
	if err := m.Mount(n.rest); err != nil {
		return err
	}
	d, err := discovery.New(discovery.Config{
		ServerName: cfg.ServerName, BaseURL: cfg.BaseURL, Version: cfg.Version,
		IRCAddr: addrOf(n.ircLn), TLSAddr: addrOf(n.tlsLn), TLSSelfSigned: cfg.TLSCertFile == "", Terms: terms,
		Limits: discovery.Limits{
			FloodLimits: !cfg.NoFloodLimits, MaxConnsPerIP: cfg.MaxConnsPerIP, ChallengeTTL: cfg.ChallengeTTL,
			SigningKeyLifetime: cfg.SigningKeyLifetime, BatchKeyPairs: signingapi.MaxBatchPairs,
			MCP: mcp.DefaultLimit, MCPLimitsOff: cfg.NoFloodLimits, MCPBodyBytes: mcp.MaxBodyBytes,
			Coordination: fsmcoord.DefaultCoordBudget,
		},
		FreeFormSession: cfg.Assist.Configured(),
		Logger:          n.log.With("component", "discovery"),
		Accounts:        n.machine,
		Registration: discovery.Registration{Enabled: cfg.AccountRegistration.Enabled,
			BeforeConnect: cfg.AccountRegistration.BeforeConnect, PerAddressPerHour: cfg.AccountRegistration.PerAddressPerHour},
	})
	if err != nil {
		return fmt.Errorf("discovery: %w", err)
	}
	return d.Mount(n.rest)
}
