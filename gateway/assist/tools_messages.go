package assist

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// Message is a readable message as the tools show it.
type Message struct {
	MsgID     string `json:"msgid"`
	Timestamp int64  `json:"timestamp"` // unix seconds
	TimeMS    int64  `json:"time_ms"`
	From      string `json:"from"`
	Command   string `json:"command"`
	Text      string `json:"text"`
	Edited    bool   `json:"edited,omitempty"`
	Origin    string `json:"origin"` // the node that stored it first
}

func messageOf(m eventstore.Message) Message {
	return Message{MsgID: m.MsgID, Timestamp: m.Time.Unix(), TimeMS: m.Time.UnixMilli(), From: m.SenderNick,
		Command: m.Command, Text: m.Text, Edited: m.Revision != "", Origin: m.Origin}
}

// readableIn looks msgid up and returns it when it is a message of channel that the channel shows
// now; the caller has checked read access to channel.
func (s *Service) readableIn(ctx context.Context, channel, msgid string) (eventstore.Message, bool) {
	m, err := s.cfg.Store.Get(ctx, msgid)
	if err != nil || m.Venue != channel || !m.DeletedAt.IsZero() || !s.cfg.Store.Visible(m) {
		return eventstore.Message{}, false
	}
	return m, true
}

func validMsgID(field, v string) error {
	if err := text(field, v, 64, true); err != nil {
		return err
	}
	if strings.ContainsAny(v, " :,") {
		return fmt.Errorf("field %s is not a msgid", field)
	}
	return nil
}

// diagnose_message_ordering: the server's order of the given messages against the order seen.
func (s *Service) diagnoseMessageOrdering(ctx context.Context, who caller, body []byte) (*answer, error) {
	var in struct {
		Channel    string   `json:"channel"`
		MessageIDs []string `json:"message_ids"`
		Symptom    string   `json:"symptom"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	channel, err := channelName("channel", in.Channel, true)
	if err != nil {
		return nil, err
	}
	if len(in.MessageIDs) == 0 || len(in.MessageIDs) > maxMessageIDs {
		return nil, fmt.Errorf("field message_ids must hold 1 to %d msgids", maxMessageIDs)
	}
	for _, id := range in.MessageIDs {
		if err := validMsgID("message_ids", id); err != nil {
			return nil, err
		}
	}
	if err := text("symptom", in.Symptom, maxSymptom, false); err != nil {
		return nil, err
	}
	if _, refused := s.gateMember(channel, who, "DIAGNOSE_MESSAGE_ORDERING"); refused != nil {
		return refused, nil
	}
	a := newAnswer(s.cfg.Now())
	switch {
	case s.cfg.Store == nil:
		return a.diagnose(false, "MESSAGES_NOT_FOUND", low, "This node keeps no message store"), nil
	}
	var found []eventstore.Message
	seen := map[string]bool{}
	for _, id := range in.MessageIDs {
		if seen[id] {
			continue
		}
		seen[id] = true
		if m, ok := s.readableIn(ctx, channel, id); ok {
			found = append(found, m)
		}
	}
	missing := len(seen) - len(found)
	if missing > 0 {
		a.redact(fmt.Sprintf("%s that %s not a readable message of %s on this node", plural(missing, "id", "ids"), map[bool]string{true: "is", false: "are"}[missing == 1], channel))
	}
	if len(found) == 0 {
		return a.diagnose(false, "MESSAGES_NOT_FOUND", high, "None of the ids is a message of "+channel+" stored on this node").
			fix("Send the msgid tags of messages of this channel", "").
			followup("diagnose_sync", "a message may not have reached this node yet"), nil
	}
	observed := make([]string, len(found))
	for i, m := range found {
		observed[i] = m.MsgID
	}
	canonical := append([]eventstore.Message(nil), found...)
	sort.SliceStable(canonical, func(i, j int) bool {
		if !canonical[i].Time.Equal(canonical[j].Time) {
			return canonical[i].Time.Before(canonical[j].Time)
		}
		return canonical[i].MsgID < canonical[j].MsgID
	})
	order := make([]string, len(canonical))
	for i, m := range canonical {
		order[i] = m.MsgID
		note := ""
		if m.ReplacesMsgID != "" {
			note = " (an edit of " + m.ReplacesMsgID + ": shown in place of its original)"
		}
		a.fact(fmt.Sprintf("%d. %s at %s from %s, stored first by node %s%s", i+1, m.MsgID,
			m.Time.UTC().Format("2006-01-02T15:04:05.000Z"), m.SenderNick, m.Origin, note))
	}
	a.fact("The server orders a channel by server time (milliseconds), then msgid; the server-time tag carries it")
	if strings.Join(order, ",") == strings.Join(observed, ",") {
		return a.diagnose(true, "ORDER_MATCHES_CANONICAL", high, "The order you saw is the server's order"), nil
	}
	return a.diagnose(false, "DISPLAY_ORDER_MISMATCH", high, "The order you saw differs from the server's: "+strings.Join(order, ", ")).
		fix("Sort by the server-time tag (request the server-time capability), not by arrival", "Messages from other nodes arrive after local ones; history (CHATHISTORY) returns the server's order"), nil
}

// replay_missed_messages: the readable messages after since_msgid.
func (s *Service) replayMissedMessages(ctx context.Context, who caller, body []byte) (*answer, error) {
	var in struct {
		Channel    string `json:"channel"`
		SinceMsgID string `json:"since_msgid"`
		Limit      *int   `json:"limit"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	channel, err := channelName("channel", in.Channel, true)
	if err != nil {
		return nil, err
	}
	if err := validMsgID("since_msgid", in.SinceMsgID); err != nil {
		return nil, err
	}
	limit := maxReplay
	if in.Limit != nil {
		if *in.Limit < 1 || *in.Limit > maxReplay {
			return nil, fmt.Errorf("field limit must be 1 to %d", maxReplay)
		}
		limit = *in.Limit
	}
	if _, refused := s.gate(channel, who, "REPLAY_MISSED_MESSAGES"); refused != nil {
		return refused, nil
	}
	a := newAnswer(s.cfg.Now())
	switch {
	case s.cfg.Store == nil:
		return a.diagnose(false, "ANCHOR_MSGID_NOT_FOUND", low, "This node keeps no message store"), nil
	}
	anchor, ok := s.readableIn(ctx, channel, in.SinceMsgID)
	if !ok {
		return a.diagnose(false, "ANCHOR_MSGID_NOT_FOUND", high, "since_msgid is not a message of "+channel+" stored on this node").
			fix("Send the msgid of the last message of this channel you saw", "").
			followup("diagnose_sync", "the message may not have reached this node yet"), nil
	}
	msgs, err := s.cfg.Store.ResumeAfter(ctx, channel, anchor.MsgID, limit+1)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, errors.New("the request ended before the history was read")
		}
		s.log.Warn("replay: reading history", "channel", channel, "err", err)
		return a.diagnose(false, "GAP_REPORTED", low, "The history of "+channel+" could not be read on this node now"), nil
	}
	more := len(msgs) > limit
	if more {
		msgs = msgs[:limit]
	}
	out := make([]Message, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, messageOf(m))
	}
	summary := fmt.Sprintf("%s in %s after %s", plural(len(out), "message", "messages"), channel, anchor.MsgID)
	if more {
		summary += fmt.Sprintf(" (the first %d; ask again from the last one for more)", limit)
	}
	a.diagnose(true, "GAP_REPORTED", high, summary).
		fact("The anchor " + anchor.MsgID + " was sent at " + anchor.Time.UTC().Format(time.RFC3339)).
		fact("Messages are in the order this node delivered them (one delivered late may come again); edited ones in their current form; deleted ones left out")
	if len(out) > 0 {
		a.fact("The newest is " + out[len(out)-1].MsgID)
	}
	a.e.Evidence = map[string]any{"channel": channel, "messages": out, "more": more}
	return a, nil
}

// explain_message_routing: who receives a message line and why.
func (s *Service) explainMessageRouting(ctx context.Context, who caller, body []byte) (*answer, error) {
	var in struct {
		WireLine string `json:"wire_line"`
		MyNick   string `json:"my_nick"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	a := newAnswer(s.cfg.Now())
	if len(in.WireLine) > maxWireLine {
		return a.diagnose(false, "WIRE_LINE_TOO_LARGE", high, fmt.Sprintf("The line is over %d bytes, the longest line the server reads; it would be refused with 417", maxWireLine)), nil
	}
	if err := text("my_nick", in.MyNick, maxFieldBytes, false); err != nil {
		return nil, err
	}
	line := strings.TrimRight(in.WireLine, "\r\n")
	m, err := ircmsg.Parse(line)
	if err != nil || strings.ContainsAny(line, "\r\n\x00") {
		return a.diagnose(false, "WIRE_LINE_PARSE_FAILED", high, "The line is not a valid IRC message").
			fix("Send one line: [@tags] [:source] COMMAND params", ""), nil
	}
	cmd := strings.ToUpper(m.Command)
	if cmd != "PRIVMSG" && cmd != "NOTICE" && cmd != "TAGMSG" {
		return a.diagnose(true, "ROUTING_EXPLAINED", medium, cmd+" is not a message: it is answered to its sender and, for state changes, replicated to every node through Raft"), nil
	}
	if len(m.Params) == 0 || m.Params[0] == "" {
		return a.diagnose(false, "WIRE_LINE_PARSE_FAILED", high, "The message has no target (411)"), nil
	}
	target := m.Params[0]
	if strings.Contains(target, ",") {
		a.fact("The line names several targets; each is routed on its own (at most 4)")
		target, _, _ = strings.Cut(target, ",")
	}
	status := ""
	for len(target) > 1 && strings.ContainsRune("@%+", rune(target[0])) && (target[1] == '#' || strings.ContainsRune("@%+", rune(target[1]))) {
		if status == "" {
			status = target[:1]
		}
		target = target[1:]
	}
	if target[0] != '#' && target[0] != '&' {
		return s.routeDirect(a, cmd, target, in.MyNick), nil
	}
	channel, err := channelName("target", target, true)
	if err != nil {
		return a.diagnose(false, "WIRE_LINE_PARSE_FAILED", high, "The target is not a valid channel name"), nil
	}
	tier := s.tierIn(channel, who)
	if !tier.exists {
		return a.diagnose(true, "ROUTING_EXPLAINED", high, "There is no channel "+channel+": the sender gets 403 and nobody receives it"), nil
	}
	a.fact("A channel message is checked on the sender's node against its replica (+n, +m, bans, mutes, +E, +C, flood), stored there durably (one fsynced commit), then delivered to that node's members")
	a.fact("Each node keeps one long-lived exchange stream to every other node of the cluster: the sender's node reads the message back from its durable log and sends it on them; each receiving node stores it (deduplicated by msgid) and delivers it to its own members; a node that was away pulls what it missed from the origin's log")
	if cmd == "TAGMSG" {
		a.fact("A TAGMSG reaches only members that negotiated message-tags; typing notifications are relayed live and never stored")
	}
	if status != "" {
		a.fact("The " + status + " prefix (STATUSMSG) limits it to members with that prefix or a higher one; it is live only, never stored")
	}
	if !tier.readable {
		a.redact("the members of " + channel + " and where they are connected (restricted channel)").
			redact("whether a message with this line's msgid exists")
		return a.diagnose(true, "ROUTING_EXPLAINED", medium, channel+" is restricted: its members receive it on the nodes they are connected to"), nil
	}
	var members []fsm.AssistRecipient
	s.cfg.State.Read(func(st *fsm.State) { members = fsm.Diagnose(st).Recipients(channel) })
	byNode := map[string][]string{}
	var nodes []string
	me := ""
	for _, r := range members {
		if status != "" && !hasPrefix(r.Prefixes, status) {
			continue
		}
		key := "node " + r.Node
		if r.Remote {
			key = "peer server " + r.Node
		}
		if _, ok := byNode[key]; !ok {
			nodes = append(nodes, key)
		}
		byNode[key] = append(byNode[key], r.Nick)
		if in.MyNick != "" && fsm.Fold(r.Nick) == fsm.Fold(in.MyNick) {
			me = key
		}
	}
	sort.Strings(nodes)
	total := 0
	for _, n := range nodes {
		total += len(byNode[n])
		a.fact(fmt.Sprintf("%s: %s (%s)", n, plural(len(byNode[n]), "recipient", "recipients"), strings.Join(byNode[n], ", ")))
	}
	if s.cfg.LinkedPeer != nil {
		if peer := s.cfg.LinkedPeer(channel); peer != "" {
			a.fact(channel + " is linked with " + peer + ": messages made here are sent there as signed envelopes")
		}
	}
	source := m.Source
	if i := strings.IndexByte(source, '!'); i >= 0 {
		source = source[:i]
	}
	switch {
	case in.MyNick != "" && fsm.Fold(source) == fsm.Fold(in.MyNick):
		a.fact("You sent it: you get it back only with echo-message, with its msgid and server time")
	case me != "":
		a.fact("You (" + in.MyNick + ") are a member: you receive it on " + me)
	case in.MyNick != "":
		a.fact(in.MyNick + " is not a member of " + channel + " and does not receive it")
	}
	if id := m.Tags["msgid"]; id != "" && s.cfg.Store != nil && len(id) <= 64 {
		if stored, ok := s.readableIn(ctx, channel, id); ok {
			a.fact("Message " + stored.MsgID + " was stored by node " + stored.Origin + " at " + stored.Time.UTC().Format(time.RFC3339) + " and is on this node")
		} else {
			a.fact("The line's msgid is not a message of " + channel + " on this node")
		}
	}
	return a.diagnose(true, "ROUTING_EXPLAINED", high, fmt.Sprintf("%s to %s reaches %s on %s", cmd, status+channel,
		plural(total, "member", "members"), plural(len(nodes), "node or peer", "nodes or peers"))), nil
}

// hasPrefix reports whether a member's prefixes reach a STATUSMSG prefix.
func hasPrefix(prefixes, status string) bool {
	rank := map[byte]int{'@': 3, '%': 2, '+': 1}
	want := rank[status[0]]
	for i := 0; i < len(prefixes); i++ {
		if rank[prefixes[i]] >= want {
			return true
		}
	}
	return false
}

// routeDirect explains a private message.
func (s *Service) routeDirect(a *answer, cmd, target, myNick string) *answer {
	var sessions []fsm.AssistSession
	s.cfg.State.Read(func(st *fsm.State) {
		if strings.HasPrefix(target, "did:") {
			sessions = fsm.Diagnose(st).Sessions(target)
			return
		}
		if se, ok := fsm.Diagnose(st).SessionByNick(target); ok {
			if se.DID != "" {
				sessions = fsm.Diagnose(st).Sessions(se.DID)
			} else {
				sessions = []fsm.AssistSession{se}
			}
		}
	})
	a.fact("A private message from an authenticated user is stored under the conversation of the two DIDs and reaches every live session of the target's DID")
	if len(sessions) == 0 {
		return a.diagnose(true, "ROUTING_EXPLAINED", high, cmd+" to "+target+": nobody is connected under that name; to a nick the sender gets 401")
	}
	nodes := map[string]bool{}
	for _, se := range sessions {
		nodes[se.Node] = true
	}
	if myNick != "" && fsm.Fold(myNick) == fsm.Fold(target) {
		a.fact("You are the target")
	}
	return a.diagnose(true, "ROUTING_EXPLAINED", high, fmt.Sprintf("%s to %s reaches %s on %s", cmd, target,
		plural(len(sessions), "session", "sessions"), plural(len(nodes), "node", "nodes")))
}
