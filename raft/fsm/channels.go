package fsm

import "strconv"

// removeMember takes a session out of a channel and deletes the channel when it is left empty and
// holds nothing worth keeping (no founder, DID ops, topic or lists).
func (a *Applier) removeMember(c *Channel, id string) {
	if c == nil {
		return
	}
	delete(c.members, id)
	a.st.unindexMember(c.Name, id)
	if se := a.st.sessions[id]; se != nil {
		delete(se.channels, c.Name)
	}
	if len(c.members) > 0 {
		return
	}
	if c.FounderDID == "" && len(c.didOps) == 0 && c.Topic == "" &&
		len(c.Bans) == 0 && len(c.Exceptions) == 0 && len(c.BanExceptions) == 0 && len(c.Pins) == 0 {
		a.deleteChannel(c.Name)
		return
	}
	c.EmptySince = a.env.Time
}

// incarnation names a channel created by the entry being applied: the proposer's time and the
// log index, both the same on every node, and unique for the life of the log.
func (a *Applier) incarnation() string {
	return strconv.FormatInt(a.env.Time, 36) + "." + strconv.FormatUint(a.index, 36)
}

func validChannelName(name string) bool {
	return len(name) >= 2 && len(name) <= MaxChannelLen && (name[0] == '#' || name[0] == '&') && Fold(name) == name
}

func (a *Applier) join(c Join) Result {
	se := a.st.sessions[c.Session]
	if se == nil {
		return Result{Code: ErrNoSuchSession}
	}
	if !validChannelName(c.Channel) {
		return Result{Code: ErrBadName}
	}
	ch := a.st.channels[c.Channel]
	if ch != nil && ch.members[se.ID] != nil {
		return Result{Code: NoChange}
	}
	if len(se.channels) >= MaxChannelsPerSession {
		return Result{Code: ErrTooManyChannels}
	}
	created := false
	member := &Member{JoinedAt: a.env.Time}
	if ch == nil {
		if se.DID != "" && a.st.foundedBy(se.DID) >= MaxFoundedPerDID {
			return Result{Code: ErrTooManyFounded}
		}
		ch = &Channel{Name: c.Channel, CreatedAt: a.env.Time, Incarnation: a.incarnation(), NoExternal: true,
			TopicLock: true, FounderDID: se.DID, members: map[string]*Member{}}
		a.st.addChannel(ch)
		created = true
		member.Op = true
	} else {
		founder := se.DID != "" && se.DID == ch.FounderDID
		privileged := founder || se.Oper
		hostmask := se.Hostmask()
		key := InviteKey(se.ID, se.DID)
		_, invited := ch.invites[key]
		if !privileged {
			if r := ch.joinRefusal(hostmask, se.DID, c.Key, invited); r.Code != OK {
				return Result{Code: r.Code}
			}
		}
		if invited {
			delete(ch.invites, key)
		}
		if founder || (se.DID != "" && ch.didOps[se.DID]) {
			member.Op = true
		}
		if ch.FounderDID == "" && len(ch.members) == 0 && se.DID != "" && a.st.foundedBy(se.DID) < MaxFoundedPerDID {
			// An unowned channel that everyone left is founded again by its next authenticated
			// joiner (who joins it unowned when it founds too many already).
			a.st.setFounder(ch, se.DID)
			member.Op = true
		}
	}
	ch.EmptySince = 0
	ch.members[se.ID] = member
	se.channels[ch.Name] = true
	a.st.indexMember(ch.Name, se, member)
	a.emit(Event{Kind: EvJoin, Actor: se.Ref(), Channel: ch.Name, Member: *member, Created: created})
	m := *member
	return Result{Code: OK, Member: &m, Created: created}
}

func (a *Applier) memberOf(sessionID, channel string) (*Session, *Channel, Result) {
	se := a.st.sessions[sessionID]
	if se == nil {
		return nil, nil, Result{Code: ErrNoSuchSession}
	}
	ch := a.st.channels[channel]
	if ch == nil {
		return se, nil, Result{Code: ErrNoSuchChannel}
	}
	return se, ch, Result{Code: OK}
}

func (a *Applier) part(c Part) Result {
	se, ch, r := a.memberOf(c.Session, c.Channel)
	if r.Code != OK {
		return r
	}
	if ch.members[se.ID] == nil {
		return Result{Code: ErrNotOnChannel}
	}
	a.removeMember(ch, se.ID)
	a.memberLeft(se.Ref(), c.Channel)
	a.emit(Event{Kind: EvPart, Actor: se.Ref(), Channel: c.Channel, Text: c.Reason})
	return Result{Code: OK}
}

func (a *Applier) kick(c Kick) Result {
	se, ch, r := a.memberOf(c.Session, c.Channel)
	if r.Code != OK {
		return r
	}
	me := ch.members[se.ID]
	if me == nil && !se.Oper {
		return Result{Code: ErrNotOnChannel}
	}
	target := a.st.sessions[c.Target]
	if target == nil || ch.members[target.ID] == nil {
		return Result{Code: ErrUserNotInChannel}
	}
	isOp := a.st.isChannelOp(ch, se)
	isHalf := me != nil && me.HalfOp
	if !isOp {
		tm := ch.members[target.ID]
		if !isHalf || tm.Op || tm.HalfOp || (target.DID != "" && target.DID == ch.FounderDID) {
			return Result{Code: ErrChanOpNeeded}
		}
	}
	ref := target.Ref()
	a.removeMember(ch, target.ID)
	a.memberLeft(ref, c.Channel)
	a.emit(Event{Kind: EvKick, Actor: se.Ref(), Target: ref, Channel: c.Channel, Text: c.Reason})
	return Result{Code: OK}
}

func (a *Applier) topic(c Topic) Result {
	se, ch, r := a.memberOf(c.Session, c.Channel)
	if r.Code != OK {
		return r
	}
	if len(c.Text) > MaxTopicLen {
		return Result{Code: ErrTopicTooLong}
	}
	me := ch.members[se.ID]
	if me == nil && !se.Oper {
		return Result{Code: ErrNotOnChannel}
	}
	if ch.TopicLock && !a.st.isChannelOp(ch, se) && !(me != nil && me.HalfOp) {
		return Result{Code: ErrChanOpNeeded}
	}
	ch.Topic, ch.TopicBy, ch.TopicAt = c.Text, se.Hostmask(), a.env.Time
	if c.Text == "" {
		ch.TopicBy, ch.TopicAt = "", 0
	}
	a.emit(Event{Kind: EvTopic, Actor: se.Ref(), Channel: c.Channel, Text: c.Text})
	return Result{Code: OK}
}

func (a *Applier) invite(c Invite) Result {
	se, ch, r := a.memberOf(c.Session, c.Channel)
	if r.Code != OK {
		return r
	}
	if ch.members[se.ID] == nil && !se.Oper {
		return Result{Code: ErrNotOnChannel}
	}
	if ch.InviteOnly && !a.st.isChannelOp(ch, se) {
		return Result{Code: ErrChanOpNeeded}
	}
	target := a.st.sessions[c.Target]
	if target == nil {
		return Result{Code: ErrNoSuchSession}
	}
	return a.addInvite(ch, c.Channel, target, se.Ref())
}

// addInvite files target's invitation to ch (evicting the oldest when the list is full) and
// tells the channel; a member already on it is refused. Local and federated invites share it.
func (a *Applier) addInvite(ch *Channel, channel string, target *Session, actor SessionRef) Result {
	if ch.members[target.ID] != nil {
		return Result{Code: ErrUserOnChannel}
	}
	if ch.invites == nil {
		ch.invites = map[string]int64{}
	}
	if len(ch.invites) >= MaxListEntries {
		evictOldestInvite(ch.invites)
	}
	ch.invites[InviteKey(target.ID, target.DID)] = a.env.Time
	a.emit(Event{Kind: EvInvite, Actor: actor, Target: target.Ref(), Channel: channel})
	return Result{Code: OK}
}

// evictOldestInvite drops the oldest invite (ties broken by key) so the list stays bounded.
func evictOldestInvite(invites map[string]int64) {
	oldest, at := "", int64(0)
	for k, t := range invites {
		if oldest == "" || t < at || (t == at && k < oldest) {
			oldest, at = k, t
		}
	}
	delete(invites, oldest)
}

func (a *Applier) pin(c Pin) Result {
	se, ch, r := a.memberOf(c.Session, c.Channel)
	if r.Code != OK {
		return r
	}
	if c.MsgID == "" || len(c.MsgID) > 64 {
		return Result{Code: ErrInvalid}
	}
	if !a.st.isChannelOp(ch, se) {
		return Result{Code: ErrChanOpNeeded}
	}
	for _, p := range ch.Pins {
		if p.MsgID == c.MsgID {
			return Result{Code: ErrAlreadyPinned}
		}
	}
	entry := PinEntry{MsgID: c.MsgID, PinnedBy: se.Nick, PinnedByDID: se.DID, PinnedAt: a.env.Time}
	ch.Pins = append([]PinEntry{entry}, ch.Pins...)
	if len(ch.Pins) > MaxPins {
		ch.Pins = ch.Pins[:MaxPins]
	}
	a.emit(Event{Kind: EvPin, Actor: se.Ref(), Channel: ch.Name, MsgID: c.MsgID})
	return Result{Code: OK}
}

func (a *Applier) unpin(c Unpin) Result {
	se, ch, r := a.memberOf(c.Session, c.Channel)
	if r.Code != OK {
		return r
	}
	if !a.st.isChannelOp(ch, se) {
		return Result{Code: ErrChanOpNeeded}
	}
	for i, p := range ch.Pins {
		if p.MsgID == c.MsgID {
			ch.Pins = append(ch.Pins[:i:i], ch.Pins[i+1:]...)
			a.emit(Event{Kind: EvUnpin, Actor: se.Ref(), Channel: ch.Name, MsgID: c.MsgID})
			return Result{Code: OK}
		}
	}
	return Result{Code: ErrNotPinned}
}
