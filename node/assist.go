package node

import (
	"context"
	"fmt"
	"sort"

	"github.com/palaver-chat/palaver/federation/exchange"
	"github.com/palaver-chat/palaver/gateway/assist"
	"github.com/palaver-chat/palaver/gateway/irc"
)

// disconnectRecord is the node's record of recent disconnects, made on first use: the IRC edge
// files into it and the assistance tools read it.
func (n *Node) disconnectRecord() *assist.Disconnects {
	if n.disconnects == nil {
		n.disconnects = assist.NewDisconnects()
	}
	return n.disconnects
}

// mountAssist puts the assistance tools and /agent/session on the REST server.
func (n *Node) mountAssist() error {
	cfg := n.cfg
	var linked func(string) string
	if n.federation != nil {
		linked = n.federation.PeerOf
	}
	svc, err := assist.New(assist.Config{
		ServerName: cfg.ServerName, NodeName: cfg.NodeName, OperDIDs: cfg.OperDIDs,
		State: n.machine, Store: n.events, Disconnects: n.disconnectRecord(),
		Send: assistSend{n.irc}, Sync: assistSync{n}, LinkedPeer: linked,
		Transports: assist.Transports{TCP: n.ircLn != nil, TLS: n.tlsLn != nil, WebSocket: true,
			Caps: irc.Capabilities(), Guests: !cfg.NoGuests},
		Options: cfg.Assist, LimitOff: cfg.NoFloodLimits, Logger: n.log.With("component", "assist"),
	})
	if err != nil {
		return err
	}
	return svc.Mount(n.rest)
}

// assistSend runs the IRC edge's send checks for the tools.
type assistSend struct{ s *irc.Server }

func (a assistSend) CheckChannelSend(sid, channel, text string) assist.SendVerdict {
	p := a.s.PredictChannelSend(sid, channel, text)
	return assist.SendVerdict{Numeric: p.Numeric, Refusal: p.Refusal, FloodKnown: p.Local, FloodOK: p.FloodOK,
		Tokens: p.Tokens, FloodLimited: p.FloodLimited}
}

// assistSync reports the node's Raft and exchange counters.
type assistSync struct{ n *Node }

func (a assistSync) SyncFacts(ctx context.Context) assist.SyncFacts {
	n := a.n
	st := n.raft.Status()
	f := assist.SyncFacts{Node: n.cfg.NodeName, Role: st.Role, Leader: st.LeaderID, Term: st.Term,
		Applied: st.AppliedIndex, Commit: st.CommitIndex, LastLog: st.LastLogIndex, Voters: st.Voters, NonVoters: st.NonVoters}
	for _, m := range n.raft.Members() {
		f.Members = append(f.Members, assist.SyncMember{Node: m.NodeID, State: string(m.State), Suffrage: suffrageName(string(m.Suffrage)),
			Leader: m.Leader, Self: m.Self})
	}
	for _, p := range n.peers() {
		origin := exchange.Name(p.DID)
		c := assist.SyncCursor{Origin: origin, Queued: n.exchange.Queued(p.DID)}
		mk, dk, rk := exchange.CursorKeys(origin)
		var err error
		for _, x := range []struct {
			key string
			dst *int64
		}{{mk, &c.Messages}, {dk, &c.Deletes}, {rk, &c.Reactions}} {
			if *x.dst, err = n.events.Cursor(ctx, x.key); err != nil {
				f.CursorError = fmt.Sprintf("cursor %s: %v", x.key, err)
			}
		}
		f.Cursors = append(f.Cursors, c)
	}
	sort.Slice(f.Cursors, func(i, j int) bool { return f.Cursors[i].Origin < f.Cursors[j].Origin })
	for _, p := range n.cfg.Peers {
		f.FederationPeers = append(f.FederationPeers, p.DID)
	}
	return f
}

func suffrageName(s string) string {
	if s == "" {
		return "not in the configuration"
	}
	return s
}
