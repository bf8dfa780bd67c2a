package fsm

// FederatedTopic sets a linked channel's topic as decided by the channel's home server (see
// federation/peering): the federation layer has already checked the remote actor against local
// state, so no session is involved. Setting the topic it already has changes nothing and emits
// nothing, so a home that resends its topics on every reconnect does not repeat them to clients.
type FederatedTopic struct {
	Channel  string `json:"channel"`
	Text     string `json:"text"`
	SetBy    string `json:"set_by"` // nick!user@host of the remote actor
	SetByDID string `json:"set_by_did,omitempty"`
}

func (FederatedTopic) CommandType() CommandType { return TypeFederatedTopic }

func (a *Applier) federatedTopic(c FederatedTopic) Result {
	ch := a.st.channels[c.Channel]
	if ch == nil {
		return Result{Code: ErrNoSuchChannel}
	}
	if len(c.Text) > MaxTopicLen {
		return Result{Code: ErrTopicTooLong}
	}
	if ch.Topic == c.Text && (c.Text == "" || ch.TopicBy == c.SetBy) {
		return Result{Code: NoChange}
	}
	ch.Topic, ch.TopicBy, ch.TopicAt = c.Text, c.SetBy, a.env.Time
	if c.Text == "" {
		ch.TopicBy, ch.TopicAt = "", 0
	}
	nick, user, host := splitHostmask(c.SetBy)
	a.emit(Event{Kind: EvTopic, Actor: SessionRef{Nick: nick, User: user, Host: host, DID: c.SetByDID}, Channel: c.Channel, Text: c.Text})
	return Result{Code: OK}
}

// splitHostmask splits nick!user@host (missing parts are empty).
func splitHostmask(mask string) (nick, user, host string) {
	nick, rest, _ := cut(mask, '!')
	user, host, _ = cut(rest, '@')
	return nick, user, host
}

func cut(s string, sep byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// FederatedMode applies channel modes of a linked channel that name no local session: from the
// home server (see federation/peering, which checked the remote actor against local state), the
// flags i, t, n, m and the ban and invite-exception lists (Arg: the mask); and, made here by a
// channel operator (Session), DID ops (o, Arg: the DID) for DIDs that may have no session here,
// which also set or clear @ on the DID's sessions in the channel. The founder's DID op is never
// removed. AddOnly (the home's snapshot when a link comes up) applies only additions, so a sync
// never weakens the channel.
type FederatedMode struct {
	Session  string       `json:"session,omitempty"` // a local channel operator; "": the home server
	Channel  string       `json:"channel"`
	Changes  []ModeChange `json:"changes"`
	SetBy    string       `json:"set_by"` // nick!user@host of the remote actor
	SetByDID string       `json:"set_by_did,omitempty"`
	AddOnly  bool         `json:"add_only,omitempty"`
}

func (FederatedMode) CommandType() CommandType { return TypeFederatedMode }

func (a *Applier) federatedMode(c FederatedMode) Result {
	ch := a.st.channels[c.Channel]
	if ch == nil {
		return Result{Code: ErrNoSuchChannel}
	}
	nick, user, host := splitHostmask(c.SetBy)
	actor := SessionRef{Nick: nick, User: user, Host: host, DID: c.SetByDID}
	if c.Session != "" {
		se := a.st.sessions[c.Session]
		if se == nil {
			return Result{Code: ErrNoSuchSession}
		}
		if !a.st.isChannelOp(ch, se) {
			return Result{Code: ErrChanOpNeeded}
		}
		actor = se.Ref()
	}
	var res Result
	for _, mc := range c.Changes {
		if c.AddOnly && !mc.Add {
			continue
		}
		mc.Target = ""
		switch mc.Mode {
		case "i", "t", "n", "m":
			flag := map[string]*bool{"i": &ch.InviteOnly, "t": &ch.TopicLock, "n": &ch.NoExternal, "m": &ch.Moderated}[mc.Mode]
			if *flag != mc.Add {
				*flag, mc.Arg = mc.Add, ""
				res.Applied = append(res.Applied, mc)
			}
		case "b", "I":
			list := &ch.Bans
			if mc.Mode == "I" {
				list = &ch.Exceptions
			}
			if mc.Arg == "" {
				continue
			}
			if changed, _ := editList(list, mc.Add, mc.Arg, c.SetBy, a.env.Time); changed {
				res.Applied = append(res.Applied, mc)
			}
		case "o":
			if c.Session != "" && a.federatedDIDOp(ch, mc) {
				res.Applied = append(res.Applied, mc)
			}
		}
	}
	if len(res.Applied) == 0 {
		res.Code = NoChange
		return res
	}
	a.emit(Event{Kind: EvMode, Actor: actor, Channel: ch.Name, Modes: res.Applied})
	return res
}

// federatedDIDOp grants or removes a DID op (mc.Arg) and the @ of its sessions in the channel.
func (a *Applier) federatedDIDOp(ch *Channel, mc ModeChange) bool {
	did := mc.Arg
	if len(did) < 5 || did[:4] != "did:" || (!mc.Add && did == ch.FounderDID) {
		return false
	}
	changed := ch.didOps[did] != mc.Add
	if mc.Add {
		if ch.didOps == nil {
			ch.didOps = map[string]bool{}
		}
		ch.didOps[did] = true
	} else {
		delete(ch.didOps, did)
	}
	for id, m := range ch.members {
		if se := a.st.sessions[id]; se != nil && se.DID == did && m.Op != mc.Add {
			m.Op, changed = mc.Add, true
		}
	}
	return changed
}

// FederatedPin pins or unpins a message of a linked channel as decided by its home server.
type FederatedPin struct {
	Channel     string `json:"channel"`
	MsgID       string `json:"msgid"` // root msgid
	Unpin       bool   `json:"unpin,omitempty"`
	PinnedBy    string `json:"pinned_by"` // nick!user@host of the remote actor
	PinnedByDID string `json:"pinned_by_did,omitempty"`
}

func (FederatedPin) CommandType() CommandType { return TypeFederatedPin }

func (a *Applier) federatedPin(c FederatedPin) Result {
	ch := a.st.channels[c.Channel]
	if ch == nil {
		return Result{Code: ErrNoSuchChannel}
	}
	if c.MsgID == "" || len(c.MsgID) > 64 {
		return Result{Code: ErrInvalid}
	}
	nick, user, host := splitHostmask(c.PinnedBy)
	actor := SessionRef{Nick: nick, User: user, Host: host, DID: c.PinnedByDID}
	for i, p := range ch.Pins {
		if p.MsgID != c.MsgID {
			continue
		}
		if !c.Unpin {
			return Result{Code: ErrAlreadyPinned}
		}
		ch.Pins = append(ch.Pins[:i:i], ch.Pins[i+1:]...)
		a.emit(Event{Kind: EvUnpin, Actor: actor, Channel: ch.Name, MsgID: c.MsgID})
		return Result{Code: OK}
	}
	if c.Unpin {
		return Result{Code: ErrNotPinned}
	}
	ch.Pins = append([]PinEntry{{MsgID: c.MsgID, PinnedBy: nick, PinnedByDID: c.PinnedByDID, PinnedAt: a.env.Time}}, ch.Pins...)
	if len(ch.Pins) > MaxPins {
		ch.Pins = ch.Pins[:MaxPins]
	}
	a.emit(Event{Kind: EvPin, Actor: actor, Channel: ch.Name, MsgID: c.MsgID})
	return Result{Code: OK}
}

// FederatedKick removes a local session from a linked channel at the word of an operator of a
// peer server (federation/peering checked the remote actor against local state). The founder
// cannot be kicked this way.
type FederatedKick struct {
	Channel string `json:"channel"`
	Target  string `json:"target"` // session id
	By      string `json:"by"`     // nick!user@host of the remote actor
	ByDID   string `json:"by_did,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

func (FederatedKick) CommandType() CommandType { return TypeFederatedKick }

func (a *Applier) federatedKick(c FederatedKick) Result {
	ch := a.st.channels[c.Channel]
	if ch == nil {
		return Result{Code: ErrNoSuchChannel}
	}
	target := a.st.sessions[c.Target]
	if target == nil || ch.members[target.ID] == nil {
		return Result{Code: ErrUserNotInChannel}
	}
	if target.DID != "" && target.DID == ch.FounderDID {
		return Result{Code: ErrChanOpNeeded}
	}
	ref := target.Ref()
	a.removeMember(ch, target.ID)
	a.memberLeft(ref, c.Channel)
	nick, user, host := splitHostmask(c.By)
	a.emit(Event{Kind: EvKick, Actor: SessionRef{Nick: nick, User: user, Host: host, DID: c.ByDID}, Target: ref, Channel: c.Channel, Text: c.Reason})
	return Result{Code: OK}
}

// FederatedInvite invites a local session to a linked channel at the word of an operator of a
// peer server.
type FederatedInvite struct {
	Channel string `json:"channel"`
	Target  string `json:"target"` // session id
	By      string `json:"by"`     // nick!user@host of the remote actor
	ByDID   string `json:"by_did,omitempty"`
}

func (FederatedInvite) CommandType() CommandType { return TypeFederatedInvite }

func (a *Applier) federatedInvite(c FederatedInvite) Result {
	ch := a.st.channels[c.Channel]
	if ch == nil {
		return Result{Code: ErrNoSuchChannel}
	}
	target := a.st.sessions[c.Target]
	if target == nil {
		return Result{Code: ErrNoSuchSession}
	}
	nick, user, host := splitHostmask(c.By)
	return a.addInvite(ch, c.Channel, target, SessionRef{Nick: nick, User: user, Host: host, DID: c.ByDID})
}
