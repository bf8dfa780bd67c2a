package node

import (
	"context"
	"log/slog"
	"sort"

	"github.com/palaver-chat/palaver/federation/exchange"
	"github.com/palaver-chat/palaver/federation/peering"
	"github.com/palaver-chat/palaver/gateway/assist"
	"github.com/palaver-chat/palaver/gateway/irc"
	"github.com/palaver-chat/palaver/gateway/rest"
	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/node/stream"
	"github.com/palaver-chat/palaver/raft"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// mountAssist puts the assistance tools and /agent/session on the REST server.
func mountAssist(cfg Config, log *slog.Logger, machine *fsm.Machine, events *eventstore.Store, disconnects *assist.Disconnects,
	streams *stream.Streams, fed *peering.Federation, ircSrv *irc.Server, rf *raft.Store, ex *exchange.Exchange,
	avs *avSurface, tcp, tls bool, rs *rest.Server) error {
	var linked func(string) string
	if fed != nil {
		linked = fed.PeerOf
	}
	svc, err := assist.New(assist.Config{
		ServerName: cfg.ServerName, NodeName: cfg.NodeName, OperDIDs: cfg.OperDIDs,
		State: machine, Store: events, Disconnects: disconnects, Applied: streams.Applied,
		Send: assistSend{ircSrv, machine}, Sync: assistSync{cfg, rf, ex}, AV: assistAV{cfg.NodeName, machine, avs}, LinkedPeer: linked,
		Transports: assist.Transports{TCP: tcp, TLS: tls, WebSocket: true,
			Caps: irc.Capabilities(), Guests: !cfg.NoGuests},
		Options: cfg.Assist, LimitOff: cfg.NoFloodLimits, Logger: log.With("component", "assist"),
	})
	if err != nil {
		return err
	}
	return svc.Mount(rs)
}

// assistSend runs the chat service's send rules, with the IRC edge's flood state of a session
// connected here.
type assistSend struct {
	irc     *irc.Server
	machine *fsm.Machine
}

func (a assistSend) CheckSend(r assist.SendRequest) assist.SendVerdict {
	flood := a.irc.MessageFlood(r.Session)
	v := chat.Check(a.machine, chat.Request{Session: r.Session, DID: r.DID, Oper: r.Oper, Channel: r.Channel,
		Command: r.Command, Text: r.Text, Tags: r.Tags, OwnSignature: r.OwnSignature,
		RateLimited: flood.Local && flood.Limited && flood.Tokens < 1})
	return assist.SendVerdict{Numeric: v.Numeric, Code: v.Code, Text: v.Text,
		FloodKnown: flood.Local, FloodLimited: flood.Limited, Tokens: flood.Tokens}
}

// assistSync reports the node's Raft and exchange counters.
type assistSync struct {
	cfg      Config
	raft     *raft.Store
	exchange *exchange.Exchange
}

func (a assistSync) SyncFacts(ctx context.Context) assist.SyncFacts {
	st := a.raft.Status()
	f := assist.SyncFacts{Node: a.cfg.NodeName, Role: st.Role, Leader: st.LeaderID, Term: st.Term,
		Applied: st.AppliedIndex, Commit: st.CommitIndex, LastLog: st.LastLogIndex, Voters: st.Voters, NonVoters: st.NonVoters}
	for _, m := range a.raft.Members() {
		f.Members = append(f.Members, assist.SyncMember{Node: m.NodeID, State: string(m.State), Suffrage: suffrageName(string(m.Suffrage)),
			Leader: m.Leader, Self: m.Self})
	}
	peers, err := a.exchange.Replication(ctx)
	if err != nil {
		f.CursorError = err.Error()
	}
	for _, p := range peers {
		f.Cursors = append(f.Cursors, assist.SyncCursor{Origin: exchange.Name(p.Peer), Queued: a.exchange.Queued(p.Peer),
			Messages: p.Messages, Deletes: p.Deletes, Reactions: p.Reactions, Stream: p.Stream, Behind: p.Behind,
			PullError: p.PullError, DeadLetters: p.DeadLetters})
	}
	sort.Slice(f.Cursors, func(i, j int) bool { return f.Cursors[i].Origin < f.Cursors[j].Origin })
	for _, p := range a.cfg.Peers {
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
