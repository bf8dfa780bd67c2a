package assist

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/palaver-chat/palaver/node/eventstore"
)

// validate_client_config: a client's declared configuration against what this server offers.
func (s *Service) validateClientConfig(_ context.Context, _ caller, body []byte) (*answer, error) {
	var in struct {
		ClientName    string          `json:"client_name"`
		ClientVersion string          `json:"client_version"`
		ServerURL     string          `json:"server_url"`
		Transport     string          `json:"transport"`
		AuthMethod    string          `json:"auth_method"`
		Supports      map[string]bool `json:"supports"`
		Desired       []string        `json:"desired_features"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	for _, f := range []struct{ name, v string }{{"client_name", in.ClientName}, {"client_version", in.ClientVersion},
		{"server_url", in.ServerURL}, {"transport", in.Transport}, {"auth_method", in.AuthMethod}} {
		if err := text(f.name, f.v, maxFieldBytes, f.name == "client_name"); err != nil {
			return nil, err
		}
	}
	if len(in.Desired) > maxListEntries || len(in.Supports) > maxListEntries {
		return nil, fmt.Errorf("supports and desired_features hold at most %d entries", maxListEntries)
	}
	for _, d := range in.Desired {
		if err := text("desired_features", d, 64, true); err != nil {
			return nil, err
		}
	}
	a := newAnswer(s.cfg.Now())
	tr := s.cfg.Transports
	warn := func(summary, details string) { a.fix(summary, details) }
	var offered []string
	if tr.TCP {
		offered = append(offered, "tcp")
	}
	if tr.TLS {
		offered = append(offered, "tls")
	}
	if tr.WebSocket {
		offered = append(offered, "websocket")
	}
	a.fact("This server offers IRC over " + strings.Join(offered, ", ") + " and the capabilities " + strings.Join(tr.Caps, " "))
	transportKind := strings.ToLower(in.Transport)
	if in.ServerURL != "" {
		u, err := url.Parse(in.ServerURL)
		if err != nil || u.Host == "" {
			warn("server_url is not a URL with a host", "Use wss://<host>/irc, ircs://<host>:6697 or irc://<host>:6667")
		} else if transportKind == "" {
			transportKind = map[string]string{"ws": "websocket", "wss": "websocket", "http": "websocket", "https": "websocket",
				"ircs": "tls", "irc": "tcp"}[u.Scheme]
		}
	}
	switch transportKind {
	case "tcp", "plain", "irc":
		if !tr.TCP {
			warn("Plain TCP IRC is not offered here", "Use "+strings.Join(offered, " or "))
		} else {
			warn("Plain TCP sends the bearer token and messages in clear", "Prefer TLS or wss://")
		}
	case "tls", "ircs":
		if !tr.TLS {
			warn("IRC over TLS is not offered here", "Use "+strings.Join(offered, " or "))
		}
	case "websocket", "ws", "wss":
		if !tr.WebSocket {
			warn("WebSocket IRC is not offered here", "Use "+strings.Join(offered, " or "))
		}
	case "":
	default:
		warn("Unknown transport "+in.Transport, "Use one of "+strings.Join(offered, ", "))
	}
	sup := func(k string) (bool, bool) { v, ok := in.Supports[k]; return v, ok }
	switch strings.ToLower(in.AuthMethod) {
	case "crypto", "atproto", "sasl", "":
		if v, ok := sup("sasl"); ok && !v {
			warn("SASL is needed to authenticate", "Identity is a DID proven with SASL ATPROTO-CHALLENGE; without it you are a guest")
		}
	case "guest", "none":
		if !tr.Guests {
			warn("This server refuses guests", "Authenticate with SASL ATPROTO-CHALLENGE")
		} else {
			a.fact("Guests may chat, but their messages go unsigned and they get no bearer token")
		}
	default:
		warn("Unknown auth_method "+in.AuthMethod, "Use crypto (a did:key you hold) or atproto (a person's PDS)")
	}
	// A capability the client does not say it supports is a warning (freeq's rule), for those
	// every client needs; away-notify only when it says it lacks it.
	checks := []struct {
		key, cap, why string
		needed        bool
	}{
		{"message_tags", "message-tags", "msgids, signatures (+freeq.at/sig), replies, edits and TAGMSG need message-tags", true},
		{"server_time", "server-time", "without server-time messages carry no timestamp and arrive in delivery order, not the server's", true},
		{"batch", "batch", "CHATHISTORY replies and multiline messages come as batches", true},
		{"echo_message", "echo-message", "without echo-message you never learn your own messages' msgids, which edits and deletes name", true},
		{"away_notify", "away-notify", "away-notify shows members going away", false},
	}
	for _, c := range checks {
		v, ok := sup(c.key)
		if !v && (ok || c.needed) && slices.Contains(tr.Caps, c.cap) {
			warn("Support "+c.cap, c.why)
		}
	}
	if v, _ := sup("e2ee"); v {
		if mt, _ := sup("message_tags"); !mt {
			warn("E2EE needs message-tags", "Encrypted payloads travel with tag metadata (msgid, sig); negotiate message-tags")
		}
	}
	resume, _ := sup("resume")
	if resume {
		a.fact("Session resumption is not offered: after a disconnect, reconnect and read the gap with CHATHISTORY or replay_missed_messages")
	}
	if slices.ContainsFunc(in.Desired, func(d string) bool {
		return strings.EqualFold(d, "multi_device") || strings.EqualFold(d, "multi-device")
	}) && !resume {
		warn("multi_device without resume: other devices see a quit and join on every reconnect, and replayed history may arrive out of order",
			"Keep the last msgid seen per channel and ask CHATHISTORY AFTER <channel> msgid=<id> on reconnect")
	}
	if v, _ := sup("crdt_sync"); v {
		a.fact("CRDT sync is not offered: history is served by CHATHISTORY and /api/v1 history")
	}
	for _, d := range in.Desired {
		switch strings.ToLower(d) {
		case "e2ee", "encryption":
			a.fact("+E channels accept only ENC payloads; the server stores them and never decrypts")
		case "resume":
			warn("resume is not offered", "Reconnect and replay the gap with replay_missed_messages")
		case "history", "chathistory":
			a.fact("History: CHATHISTORY (draft/chathistory) and GET /api/v1/channels/{name}/history")
		}
	}
	if len(a.e.SuggestedFixes) == 0 {
		return a.diagnose(true, "CONFIG_OK", high, in.ClientName+" fits this server as configured"), nil
	}
	return a.diagnose(true, "CONFIG_HAS_WARNINGS", high, fmt.Sprintf("%s works, with %s", in.ClientName,
		plural(len(a.e.SuggestedFixes), "warning", "warnings"))), nil
}

// diagnose_sync: Raft indexes, exchange cursors and peer lag of this node.
func (s *Service) diagnoseSync(ctx context.Context, who caller, body []byte) (*answer, error) {
	var in struct {
		Channel string `json:"channel"`
		Account string `json:"account"`
		Symptom string `json:"symptom"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	channel, err := channelName("channel", in.Channel, false)
	if err != nil {
		return nil, err
	}
	if err := account("account", in.Account, false); err != nil {
		return nil, err
	}
	if err := text("symptom", in.Symptom, maxSymptom, false); err != nil {
		return nil, err
	}
	if in.Account != "" {
		if _, refused := s.self(who, in.Account, "DIAGNOSE_SYNC"); refused != nil {
			return refused, nil
		}
	}
	a := newAnswer(s.cfg.Now())
	var f SyncFacts
	if s.cfg.Sync != nil {
		f = s.cfg.Sync.SyncFacts(ctx)
	}
	a.fact(fmt.Sprintf("Node %s is %s in term %d; leader %s", f.Node, f.Role, f.Term, orNone(f.Leader)))
	a.fact(fmt.Sprintf("Raft: applied index %d, commit index %d, last log index %d", f.Applied, f.Commit, f.LastLog))
	a.fact(fmt.Sprintf("Cluster: %s, %s", plural(f.Voters, "voter", "voters"), plural(f.NonVoters, "non-voter", "non-voters")))
	var problems []string
	if f.Leader == "" {
		problems = append(problems, "this node knows no leader: changes cannot be committed")
	}
	if f.Commit > f.Applied {
		problems = append(problems, fmt.Sprintf("this node has %d committed entries not applied yet", f.Commit-f.Applied))
	}
	if who.did == "" {
		a.redact("cluster members and exchange cursors (send a bearer token)")
	} else {
		for _, m := range f.Members {
			if m.State != "alive" && !m.Self {
				problems = append(problems, "node "+m.Node+" is "+m.State)
			}
			a.fact(fmt.Sprintf("Member %s: %s, %s", m.Node, m.State, m.Suffrage))
		}
		for _, c := range f.Cursors {
			a.fact(fmt.Sprintf("From node %s this node holds messages up to seq %d, deletes up to %d, reactions up to %d; %d pushed events wait for it",
				c.Origin, c.Messages, c.Deletes, c.Reactions, c.Queued))
			if c.Queued > 100 {
				problems = append(problems, fmt.Sprintf("%d events queued for node %s", c.Queued, c.Origin))
			}
			if c.Behind {
				problems = append(problems, fmt.Sprintf("node %s is behind: no stream from it is healthy and its latest pull failed (%s)", c.Origin, c.PullError))
			}
			if c.DeadLetters > 0 {
				problems = append(problems, fmt.Sprintf("%s from node %s could not be accepted: recorded as dead letters and passed over",
					plural(int(c.DeadLetters), "item", "items"), c.Origin))
			}
		}
		if f.CursorError != "" {
			a.fact("Exchange cursors could not be read: " + f.CursorError)
		}
		for _, p := range f.FederationPeers {
			a.fact("Federation peer: " + p)
		}
	}
	if channel != "" {
		tier := s.tierIn(channel, who)
		switch {
		case !tier.exists:
			a.fact("There is no channel " + channel)
		case !tier.readable:
			a.redact("messages of " + channel + " (restricted channel)")
		case s.cfg.Store != nil:
			if latest, err := s.latest(ctx, channel); err == nil && latest != nil {
				a.fact(fmt.Sprintf("The newest message of %s on this node is %s, stored first by node %s", channel, latest.MsgID, latest.Origin))
			} else if err == nil {
				a.fact("This node holds no message of " + channel)
			}
		}
	}
	a.fact("Each node answers from its own counters: ask every node and compare the newest msgid and the applied index")
	if len(problems) > 0 {
		return a.diagnose(false, "SYNC_STATE_REPORTED", medium, "This node may lag: "+strings.Join(problems, "; ")), nil
	}
	return a.diagnose(true, "SYNC_STATE_REPORTED", high, fmt.Sprintf("Node %s is in sync as far as it can tell: applied index %d", f.Node, f.Applied)), nil
}

// latest returns the newest message of a channel on this node.
func (s *Service) latest(ctx context.Context, channel string) (*eventstore.Message, error) {
	l, ok := s.cfg.Store.(interface {
		Latest(ctx context.Context, venue string, after eventstore.Bound, limit int) ([]eventstore.Message, error)
	})
	if !ok {
		return nil, nil
	}
	msgs, err := l.Latest(ctx, channel, eventstore.Bound{}, 1)
	if err != nil || len(msgs) == 0 {
		return nil, err
	}
	return &msgs[0], nil
}

func orNone(s string) string {
	if s == "" {
		return "none known"
	}
	return s
}

// diagnose_av_session: the SFU's state of a channel's call.
func (s *Service) diagnoseAVSession(ctx context.Context, who caller, body []byte) (*answer, error) {
	var in struct {
		Channel string `json:"channel"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	channel, err := channelName("channel", in.Channel, true)
	if err != nil {
		return nil, err
	}
	tier, refused := s.gate(channel, who, "DIAGNOSE_AV_SESSION")
	if refused != nil {
		return refused, nil
	}
	a := newAnswer(s.cfg.Now())
	switch {
	case s.cfg.AV == nil:
		return a.diagnose(false, "NO_ACTIVE_AV_SESSION", high, "AV is not running on node "+s.cfg.NodeName+": no media forwarding unit started, so there is no call in "+channel).
			fact("GET /api/v1/health reports av:false on this node"), nil
	}
	r, active, reason := s.cfg.AV.InspectAV(ctx, channel)
	if !active {
		return a.diagnose(false, "NO_ACTIVE_AV_SESSION", high, "No call in "+channel+": "+reason), nil
	}
	a.fact(fmt.Sprintf("Call %s in %s, hosted on node %s: %s", r.SessionID, channel, r.Host,
		plural(len(r.Participants), "participant", "participants")))
	if !r.WireKnown {
		a.fact("The media of this call flows through node " + r.Host + "; ask this tool there for the connection states")
	}
	if tier.member || tier.op {
		for _, p := range r.Participants {
			switch {
			case !r.WireKnown:
				a.fact(p.Nick + " is in the roster")
			case !p.OnWire:
				a.fact(p.Nick + " is in the roster but has no connection to the forwarding unit")
			case !p.InRoster:
				a.fact(p.Nick + " is connected to the forwarding unit but not in the roster")
			default:
				kf := "no keyframe request yet"
				if !p.LastKeyframeRequest.IsZero() {
					kf = "last keyframe request at " + p.LastKeyframeRequest.UTC().Format(time.RFC3339)
				}
				a.fact(fmt.Sprintf("%s sends %s; ICE %s, DTLS %s; %d packets (%d bytes) forwarded from it, loss %.1f%%; %s",
					p.Nick, plural(p.Tracks, "track", "tracks"), p.ICE, p.DTLS, p.PacketsForwarded, p.BytesForwarded,
					100*p.LossRatio, kf))
			}
		}
	} else {
		a.redact("the participants of the call (members only)")
	}
	if len(r.Problems) > 0 {
		return a.diagnose(false, r.Problems[0], medium, "The call has problems: "+strings.Join(r.Problems, ", ")), nil
	}
	return a.diagnose(true, "AV_SESSION_HEALTHY", high, "The call in "+channel+" is healthy"), nil
}
