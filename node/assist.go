package node

import (
	"context"
	"sort"

	"github.com/palaver-chat/palaver/federation/exchange"
	"github.com/palaver-chat/palaver/gateway/assist"
	"github.com/palaver-chat/palaver/gateway/irc"
	"github.com/palaver-chat/palaver/node/chat"
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
func (n *Node) mountAssist(context.Context) error {
	cfg := n.cfg
	var linked func(string) string
	if n.federation != nil {
		linked = n.federation.PeerOf
	}
	svc, err := assist.New(assist.Config{
		ServerName: cfg.ServerName, NodeName: cfg.NodeName, OperDIDs: cfg.OperDIDs,
		State: n.machine, Store: n.events, Disconnects: n.disconnectRecord(), Applied: n.streams.Applied,
		Send: assistSend{n}, Sync: assistSync{n}, AV: assistAV{n}, LinkedPeer: linked,
		Transports: assist.Transports{TCP: n.ircLn != nil, TLS: n.tlsLn != nil, WebSocket: true,
			Caps: irc.Capabilities(), Guests: !cfg.NoGuests},
		Options: cfg.Assist, LimitOff: cfg.NoFloodLimits, Logger: n.log.With("component", "assist"),
	})
	if err != nil {
		return err
	}
	return svc.Mount(n.rest)
}

// assistSend runs the chat service's send rules, with the IRC edge's flood state of a session
// connected here.
type assistSend struct{ n *Node }

func (a assistSend) CheckSend(r assist.SendRequest) assist.SendVerdict {
	flood := a.n.irc.MessageFlood(r.Session)
	v := chat.Check(a.n.machine, chat.Request{Session: r.Session, DID: r.DID, Oper: r.Oper, Channel: r.Channel,
		Command: r.Command, Text: r.Text, Tags: r.Tags, OwnSignature: r.OwnSignature,
		RateLimited: flood.Local && flood.Limited && flood.Tokens < 1})
	return assist.SendVerdict{Numeric: v.Numeric, Code: v.Code, Text: v.Text,
		FloodKnown: flood.Local, FloodLimited: flood.Limited, Tokens: flood.Tokens}
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
	peers, err := n.exchange.Replication(ctx)
	if err != nil {
		f.CursorError = err.Error()
	}
	for _, p := range peers {
		f.Cursors = append(f.Cursors, assist.SyncCursor{Origin: exchange.Name(p.Peer), Queued: n.exchange.Queued(p.Peer),
			Messages: p.Messages, Deletes: p.Deletes, Reactions: p.Reactions, Stream: p.Stream, Behind: p.Behind,
			PullError: p.PullError, DeadLetters: p.DeadLetters})
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
