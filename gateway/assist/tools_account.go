package assist

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/palaver-chat/palaver/gateway/transport"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// inspect_my_session: what the server believes about the caller's sessions.
func (s *Service) inspectMySession(_ context.Context, who caller, body []byte) (*answer, error) {
	acct, refused, err := s.selfAccount(who, body, "INSPECT_MY_SESSION")
	if err != nil || refused != nil {
		return refused, err
	}
	var sessions []fsm.AssistSession
	var nickOwned string
	s.cfg.State.Read(func(st *fsm.State) {
		sessions = fsm.Diagnose(st).Sessions(acct)
		for _, se := range sessions {
			if fsm.Diagnose(st).NickOwner(se.Nick) == acct {
				nickOwned = se.Nick
			}
		}
	})
	a := newAnswer(s.cfg.Now())
	if len(sessions) == 0 {
		a.diagnose(true, "ACCOUNT_NOT_CONNECTED", high, acct+" has no live session on "+s.cfg.ServerName).
			fact("The replicated state of every node lists no session authenticated as "+acct).
			followup("diagnose_disconnect", "find out why the last session ended")
		return a, nil
	}
	a.diagnose(true, "SESSION_REPORTED", high, fmt.Sprintf("%s has %s", acct, plural(len(sessions), "live session", "live sessions")))
	for _, se := range sessions {
		where := "on node " + se.Node
		if se.Node == s.cfg.NodeName {
			where += " (this node)"
		}
		transportKind := "plain"
		if se.Secure {
			transportKind = "TLS"
		}
		a.fact(fmt.Sprintf("Session %s: nick %s (%s), %s, %s, connected since %s", se.ID, se.Nick, se.Hostmask, where,
			transportKind, time.UnixMilli(se.ConnectedAt).UTC().Format(time.RFC3339)))
		if len(se.Channels) > 0 {
			a.fact(fmt.Sprintf("Session %s is in %s: %s", se.ID, plural(len(se.Channels), "channel", "channels"), strings.Join(se.Channels, ", ")))
		} else {
			a.fact("Session " + se.ID + " is in no channel")
		}
		if se.SigningKID != "" {
			a.fact("Session " + se.ID + " signs with its registered session key " + se.SigningKID)
		} else {
			a.fact("Session " + se.ID + " has no session key: its messages are signed with the server key (verification proves relay, not authorship)")
		}
		if se.Oper {
			a.fact("Session " + se.ID + " is a server operator")
		}
		if se.Bot {
			a.fact("Session " + se.ID + " is marked as a bot (+B)")
		}
		if se.Away != "" {
			a.fact("Session " + se.ID + " is away: " + se.Away)
		}
	}
	if nickOwned != "" {
		a.fact("The nick " + nickOwned + " is owned by " + acct)
	}
	if len(sessions) > 0 && sessions[0].SigningKID == "" {
		a.fix("Register a session key (MSGSIG) to sign your own messages", "Verification then proves authorship; see /auth.md")
	}
	return a, nil
}

// diagnose_join_failure: why a JOIN by the account is refused, naming the ban, +i, +k or +l.
func (s *Service) diagnoseJoinFailure(_ context.Context, who caller, body []byte) (*answer, error) {
	var in struct {
		Account         string `json:"account"`
		Channel         string `json:"channel"`
		Key             string `json:"key"`
		ObservedNumeric string `json:"observed_numeric"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	channel, err := channelName("channel", in.Channel, true)
	if err != nil {
		return nil, err
	}
	if err := account("account", in.Account, false); err != nil {
		return nil, err
	}
	if err := text("key", in.Key, maxFieldBytes, false); err != nil {
		return nil, err
	}
	if err := text("observed_numeric", in.ObservedNumeric, 8, false); err != nil {
		return nil, err
	}
	acct, refused := s.self(who, in.Account, "DIAGNOSE_JOIN_FAILURE")
	if refused != nil {
		return refused, nil
	}
	var v fsm.AssistJoin
	var ch fsm.AssistChannel
	var channels int
	s.cfg.State.Read(func(st *fsm.State) {
		v = fsm.Diagnose(st).Join(channel, acct, in.Key)
		ch, _ = fsm.Diagnose(st).Channel(channel)
		if sessions := fsm.Diagnose(st).Sessions(acct); len(sessions) > 0 {
			channels = len(sessions[0].Channels)
		}
	})
	a := newAnswer(s.cfg.Now())
	tier := s.tierIn(channel, who)
	if !v.Exists || !tier.exists {
		return noChannel(a, channel).fact("A JOIN of " + channel + " would create it, with you as its operator"), nil
	}
	a.fact(fmt.Sprintf("%s has modes %s and %s", channel, ch.Modes, plural(ch.Members, "member", "members")))
	if v.Hostmask != "" {
		a.fact("Masks are matched against your connected hostmask " + v.Hostmask + " and your DID")
	} else {
		a.fact(acct + " has no live session: only did: masks can be matched, and a JOIN needs a connection")
	}
	observed := ""
	if in.ObservedNumeric != "" {
		observed = " (you saw " + in.ObservedNumeric + ")"
	}
	switch {
	case v.Member:
		a.diagnose(true, "JOIN_SHOULD_SUCCEED", high, acct+" is already a member of "+channel+"; a JOIN changes nothing")
	case v.Privileged != "":
		a.diagnose(true, "JOIN_SHOULD_SUCCEED", high, "As "+v.Privileged+" of "+channel+" you pass its bans, key, invite and limit")
	case channels >= fsm.MaxChannelsPerSession:
		a.diagnose(false, "JOIN_DENIED", high, fmt.Sprintf("405: your session is in %d channels already, the most a session may join", channels)).
			fix("PART a channel first", "")
	case v.Code == fsm.ErrBanned:
		a.diagnose(false, "JOIN_DENIED", high, "474: you match the ban "+v.Ban.Mask+" of "+channel+observed).
			fact("Ban entry: "+v.Ban.Mask+", set "+time.UnixMilli(v.Ban.SetAt).UTC().Format(time.RFC3339)).
			fix("Ask an operator of "+channel+" to lift the ban (MODE "+channel+" -b "+v.Ban.Mask+") or add an exception (+e)", "")
		if tier.op {
			a.fact("The ban was set by " + v.Ban.SetBy)
		} else {
			a.redact("who set the ban (channel operators only)")
		}
	case v.Code == fsm.ErrBadKey:
		summary := "475: " + channel + " has a key (+k) and your JOIN did not give it" + observed
		if in.Key != "" {
			summary = "475: " + channel + " has a key (+k) and the key you gave is not it" + observed
		}
		a.diagnose(false, "JOIN_DENIED", high, summary).
			redact("the channel key").
			fix("JOIN "+channel+" <key> with the key from an operator, or ask for an INVITE", "An invite passes +k, +i and +l")
	case v.Code == fsm.ErrInviteOnly:
		a.diagnose(false, "JOIN_DENIED", high, "473: "+channel+" is invite-only (+i), you have no pending invite and match no invite exception (+I)"+observed).
			fix("Ask an operator of "+channel+" to INVITE you", "")
	case v.Code == fsm.ErrChannelFull:
		a.diagnose(false, "JOIN_DENIED", high, fmt.Sprintf("471: %s is full: %d members, limit +l %d%s", channel, ch.Members, ch.Limit, observed)).
			fix("Wait for someone to leave, or ask an operator to raise the limit or INVITE you", "")
	default:
		summary := "A JOIN of " + channel + " passes its bans, key, invite and limit checks now"
		if in.ObservedNumeric != "" {
			summary += "; the refusal you saw (" + in.ObservedNumeric + ") no longer holds"
		}
		a.diagnose(true, "JOIN_SHOULD_SUCCEED", high, summary)
		if v.Invited {
			a.fact("You have a pending invite to " + channel)
		}
	}
	if tier.op {
		a.fact(fmt.Sprintf("%s has %s, %s and %s", channel, plural(len(ch.Bans), "ban entry", "ban entries"),
			plural(len(ch.BanExceptions), "ban exception", "ban exceptions"), plural(len(ch.Exceptions), "invite exception", "invite exceptions")))
	} else {
		a.redact("the other entries of the ban and exception lists (channel operators only)")
	}
	return a, nil
}

// diagnose_disconnect: the recent disconnects of the account recorded on this node.
func (s *Service) diagnoseDisconnect(_ context.Context, who caller, body []byte) (*answer, error) {
	acct, refused, err := s.selfAccount(who, body, "DIAGNOSE_DISCONNECT")
	if err != nil || refused != nil {
		return refused, err
	}
	list := s.cfg.Disconnects.For(acct)
	a := newAnswer(s.cfg.Now())
	a.fact("Every node records in memory the session ends the cluster applies, with the reason the connection's node gave; " +
		"only that node knows the transport and connection time. A node's restart clears its record (this is node " + s.cfg.NodeName + ")")
	if len(list) == 0 {
		return a.diagnose(true, "DISCONNECT_REPORTED", low, "No disconnect of "+acct+" is recorded on this node"), nil
	}
	last := list[0]
	a.diagnose(true, "DISCONNECT_REPORTED", high, fmt.Sprintf("The last disconnect of %s: %s (%s) at %s",
		acct, last.Kind, last.Reason, last.At.UTC().Format(time.RFC3339)))
	for _, d := range list {
		dur := ""
		if !d.ConnectedAt.IsZero() {
			dur = ", after " + d.At.Sub(d.ConnectedAt).Round(time.Second).String()
		}
		where := "on node " + d.Node
		if d.Transport != "" {
			where = "over " + d.Transport + " on this node"
		}
		a.fact(fmt.Sprintf("%s: %s (%q), nick %s %s%s", d.At.UTC().Format(time.RFC3339), d.Kind, d.Reason, d.Nick, where, dur))
	}
	switch last.Kind {
	case "ping_timeout":
		a.fix("Answer the server's PING with PONG", "The server pings after 30 s of silence and closes the connection when no answer comes within the ping timeout; keep the network path alive")
	case "sendq_overflow":
		a.fix("Read faster", fmt.Sprintf("The server closes a connection whose unread output passes its send queue budget; a client that stops reading (or a very slow link) hits it. Lines are at most %d bytes", transport.MaxLineBytes))
	case "kill":
		a.fix("A server operator ended the session (KILL)", "The reason names the operator")
	case "restart":
		a.fix("The node restarted or shut down: reconnect (any node of the cluster serves you)", "")
	case "signing_key":
		a.fix("Register a fresh session key (MSGSIG) after reconnecting", "The session's signing key expired or was retired")
	case "connection_closed":
		a.fix("The connection ended from your side or the network", "No server-side reason was recorded")
	case "flood":
		a.fix("Send more slowly", "See the flood limits in /agents.md")
	}
	return a, nil
}

// predict_message_outcome: the message path's checks, without sending.
func (s *Service) predictMessageOutcome(_ context.Context, who caller, body []byte) (*answer, error) {
	var in struct {
		Account   string            `json:"account"`
		Target    string            `json:"target"`
		Text      string            `json:"text"`
		Command   string            `json:"command"`
		Tags      map[string]string `json:"tags"`
		DraftSize *int              `json:"draft_size_bytes"`
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if err := account("account", in.Account, false); err != nil {
		return nil, err
	}
	if err := text("target", in.Target, maxFieldBytes, true); err != nil {
		return nil, err
	}
	if len(in.Text) > maxWireLine || !utf8.ValidString(in.Text) {
		return nil, fmt.Errorf("field text must be UTF-8 of at most %d bytes", maxWireLine)
	}
	if in.DraftSize != nil && (*in.DraftSize < 0 || *in.DraftSize > 1<<20) {
		return nil, fmt.Errorf("field draft_size_bytes must be 0 to %d", 1<<20)
	}
	cmd := strings.ToUpper(in.Command)
	switch cmd {
	case "":
		cmd = "PRIVMSG"
	case "PRIVMSG", "NOTICE", "TAGMSG":
	default:
		return nil, errors.New("field command must be PRIVMSG, NOTICE or TAGMSG")
	}
	if len(in.Tags) > maxListEntries {
		return nil, fmt.Errorf("field tags holds at most %d tags", maxListEntries)
	}
	for k, v := range in.Tags {
		if err := text("tags", k+v, maxFieldBytes, true); err != nil {
			return nil, err
		}
	}
	acct, refused := s.self(who, in.Account, "PREDICT_MESSAGE_OUTCOME")
	if refused != nil {
		return refused, nil
	}
	a := newAnswer(s.cfg.Now())
	var sessions []fsm.AssistSession
	s.cfg.State.Read(func(st *fsm.State) { sessions = fsm.Diagnose(st).Sessions(acct) })
	if len(sessions) == 0 {
		return a.diagnose(false, "PREDICT_NOT_CONNECTED", high, acct+" has no live session: connect and authenticate before sending").
			followup("inspect_my_session", "see the sessions the server knows"), nil
	}
	se := sessions[0]
	for _, x := range sessions {
		if x.Node == s.cfg.NodeName {
			se = x // a session on this node: its flood state can be read
			break
		}
	}
	size := len(in.Text)
	if in.DraftSize != nil {
		size = *in.DraftSize
	}
	target := in.Target
	overhead := len("PRIVMSG ") + len(target) + len(" :") + 2
	if size+overhead > transport.MaxLineBytes {
		return a.diagnose(false, "PREDICTED_REJECTED", high, fmt.Sprintf("417: a %d-byte text does not fit the %d-byte line limit (%d bytes of text at most to %s)",
			size, transport.MaxLineBytes, transport.MaxLineBytes-overhead, target)).
			fix("Split the text, or send it as a draft/multiline batch", ""), nil
	}
	if target[0] != '#' && target[0] != '&' {
		return s.predictDirect(a, se, target), nil
	}
	channel, err := channelName("target", target, true)
	if err != nil {
		return nil, err
	}
	tier := s.tierIn(channel, who)
	if !tier.exists {
		return a.diagnose(false, "PREDICT_CHANNEL_DOES_NOT_EXIST", high, "403: there is no channel "+channel), nil
	}
	a.fact("Checked for session " + se.ID + " (nick " + se.Nick + ") on node " + se.Node)
	if s.cfg.Send == nil {
		return a.diagnose(false, "PREDICT_NOT_CONNECTED", low, "This node cannot run the message checks"), nil
	}
	_, signed := in.Tags["+freeq.at/sig"]
	v := s.cfg.Send.CheckSend(SendRequest{Session: se.ID, DID: se.DID, Oper: se.Oper, Channel: channel, Command: cmd,
		Text: in.Text, Tags: in.Tags, OwnSignature: signed})
	if signed {
		a.fact("The +freeq.at/sig you would send is assumed to verify; a signature that does not is refused (FAIL SIGNATURE_INVALID)")
	}
	switch {
	case !v.FloodKnown:
		a.fact("The session is connected to node " + se.Node + ": its flood state is known there only").
			redact("flood state of a session on another node")
	case !v.FloodLimited:
		a.fact("Flood limits are off on this node")
	default:
		a.fact(fmt.Sprintf("Message flood bucket: %.1f of 5 messages left (5 per 2 s)", v.Tokens))
	}
	if se.SigningKID != "" {
		a.fact("A message you sign with your session key " + se.SigningKID + " (+freeq.at/sig) is kept with your signature; unsigned ones are signed with the server key")
	} else {
		a.fact("Without a session key your messages are signed with the server key; edits, deletes and reactions need your own signature (FAIL SIGNATURE_REQUIRED)")
	}
	if refusal := v.Numeric + v.Code; refusal != "" {
		a.diagnose(false, "PREDICTED_REJECTED", high, refusal+": "+v.Text)
		switch {
		case strings.Contains(v.Text, "+n"):
			a.fix("JOIN "+channel+" first: it takes no messages from outside (+n)", "")
		case strings.Contains(v.Text, "+m"):
			a.fix("Ask an operator for voice (+v): "+channel+" is moderated (+m)", "")
		case strings.Contains(v.Text, "+b"), strings.Contains(v.Text, "muted"):
			a.fix("Ask an operator to lift the ban or mute, add a +e exception, or voice you", "").
				followup("diagnose_join_failure", "see the ban entry that matches you")
		case strings.Contains(v.Text, "+E"):
			a.fix("Encrypt the text: "+channel+" takes only ENC payloads (+E)", "")
		case strings.Contains(v.Text, "+C"):
			a.fix("Send no CTCP other than ACTION to "+channel+" (+C)", "")
		case v.Code == "RATE_LIMITED":
			a.fix("Wait: the bucket refills one message every 400 ms", "")
		case v.Code == "SIGNATURE_REQUIRED":
			a.fix("Sign the edit, delete or reaction with your session key (+freeq.at/sig)", "Register the key with MSGSIG first")
		case v.Numeric == "442":
			a.fix("JOIN "+channel+" before reacting to its messages", "")
		}
		return a, nil
	}
	return a.diagnose(true, "PREDICTED_ACCEPTED", high, "A "+cmd+" to "+channel+" passes the send rules now"), nil
}

// predictDirect predicts a private message to a nick or DID.
func (s *Service) predictDirect(a *answer, se fsm.AssistSession, target string) *answer {
	var online bool
	var owner string
	s.cfg.State.Read(func(st *fsm.State) {
		if strings.HasPrefix(target, "did:") {
			online = len(fsm.Diagnose(st).Sessions(target)) > 0
			owner = target
			return
		}
		_, online = fsm.Diagnose(st).SessionByNick(target)
		owner = fsm.Diagnose(st).NickOwner(target)
	})
	switch {
	case online:
		return a.diagnose(true, "PREDICTED_ACCEPTED", high, "A private message to "+target+" would be delivered to its live sessions")
	case strings.HasPrefix(target, "did:") && se.DID != "":
		return a.diagnose(true, "PREDICTED_ACCEPTED", medium, target+" is not connected: the message is stored under your conversation with that DID and read from history")
	case owner != "":
		return a.diagnose(false, "PREDICTED_REJECTED", high, "401: "+target+" is not connected").
			fix("Send to the owner's DID instead of the nick to leave a message in your conversation's history", "")
	}
	return a.diagnose(false, "PREDICTED_REJECTED", high, "401: no such nick "+target)
}
