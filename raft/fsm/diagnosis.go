package fsm

import "sort"

// Diagnosis reads what explains a user's situation (why a join or a message is refused, who
// would receive a line, which sessions an account has): copies of what a diagnosis needs, so
// that the caller never holds a reference into the state. The assistance tools (gateway/assist)
// use it. Get it with Diagnose inside Machine.Read; it is valid during that callback only.
type Diagnosis struct{ s *State }

// Diagnose is the diagnosis view of st.
func Diagnose(st *State) Diagnosis { return Diagnosis{st} }

// AssistChannel is a copy of a channel's modes and lists. The +k key itself is never copied: only
// whether one is set (KeyMatches compares a candidate).
type AssistChannel struct {
	Name          string
	Incarnation   string
	Modes         string
	InviteOnly    bool
	Moderated     bool
	NoExternal    bool
	Encrypted     bool
	Secret        bool
	NoCTCP        bool
	HasKey        bool
	Limit         int
	Members       int
	FounderDID    string
	Discoverable  bool
	Bans          []ListEntry
	BanExceptions []ListEntry
	Exceptions    []ListEntry
}

// Channel returns a copy of the named (folded) channel's facts; ok is false when it does not
// exist.
func (d Diagnosis) Channel(name string) (AssistChannel, bool) {
	c := d.s.channels[name]
	if c == nil {
		return AssistChannel{}, false
	}
	return AssistChannel{
		Name: c.Name, Incarnation: c.Incarnation, Modes: c.ModeString(), InviteOnly: c.InviteOnly,
		Moderated: c.Moderated, NoExternal: c.NoExternal, Encrypted: c.Encrypted, Secret: c.Secret,
		NoCTCP: c.NoCTCP, HasKey: c.Key != "", Limit: c.Limit, Members: len(c.members),
		FounderDID: c.FounderDID, Discoverable: c.Discoverable(),
		Bans:          append([]ListEntry(nil), c.Bans...),
		BanExceptions: append([]ListEntry(nil), c.BanExceptions...),
		Exceptions:    append([]ListEntry(nil), c.Exceptions...),
	}, true
}

// AssistAccess is what a DID is to a channel.
type AssistAccess struct {
	Exists   bool
	Readable bool // MayRead: a discoverable channel, or the founder, a DID op or a member's DID
	Member   bool // one of the DID's sessions is a member now
	Op       bool // the founder, a DID op, a member session with +o, or a server operator session
}

// Access says what did ("" = anonymous) is to the named (folded) channel.
func (d Diagnosis) Access(channel, did string) AssistAccess {
	c := d.s.channels[channel]
	if c == nil {
		return AssistAccess{}
	}
	a := AssistAccess{Exists: true, Readable: d.s.mayRead(c, did)}
	if did == "" {
		return a
	}
	a.Op = did == c.FounderDID || c.didOps[did]
	for _, se := range d.s.sessionsByDID(did) {
		if c.members[se.ID] != nil {
			a.Member = true
		}
		if d.s.isChannelOp(c, se) {
			a.Op = true
		}
	}
	return a
}

// AssistSession is a copy of one session's facts.
type AssistSession struct {
	ID          string
	Node        string
	Nick        string
	Hostmask    string
	DID         string
	Oper        bool
	Secure      bool
	Bot         bool
	Away        string
	SigningKID  string
	ConnectedAt int64 // unix ms
	Channels    []string
}

func assistSession(se *Session) AssistSession {
	return AssistSession{ID: se.ID, Node: se.Node, Nick: se.Nick, Hostmask: se.Hostmask(), DID: se.DID,
		Oper: se.Oper, Secure: se.Secure, Bot: se.Bot, Away: se.Away, SigningKID: se.SigningKID,
		ConnectedAt: se.ConnectedAt, Channels: sortedKeys(se.channels)}
}

// Sessions returns the live sessions authenticated as did, sorted by id.
func (d Diagnosis) Sessions(did string) []AssistSession {
	if did == "" {
		return nil
	}
	var out []AssistSession
	for _, se := range d.s.sessionsByDID(did) {
		out = append(out, assistSession(se))
	}
	return out
}

// SessionByNick returns the live session using nick.
func (d Diagnosis) SessionByNick(nick string) (AssistSession, bool) {
	se := d.s.sessionByNick(nick)
	if se == nil {
		return AssistSession{}, false
	}
	return assistSession(se), true
}

// SessionByID returns the live session with id sid.
func (d Diagnosis) SessionByID(sid string) (AssistSession, bool) {
	se := d.s.sessions[sid]
	if se == nil {
		return AssistSession{}, false
	}
	return assistSession(se), true
}

// NickOwner returns the DID owning a nick ("" when none).
func (d Diagnosis) NickOwner(nick string) string { return d.s.nickOwners[Fold(nick)] }

// JoinRefusal is why Apply would refuse a JOIN: its code (OK when it would be admitted) and, for a
// ban, the entry that matched.
type JoinRefusal struct {
	Code Code
	Ban  *ListEntry
}

// joinRefusal runs the admission checks of a JOIN to an existing channel by a user who is neither
// its founder nor a server operator (those are admitted), in the order Apply runs them.
func (c *Channel) joinRefusal(hostmask, did, key string, invited bool) JoinRefusal {
	if e := c.banEntry(hostmask, did); e != nil {
		return JoinRefusal{Code: ErrBanned, Ban: e}
	}
	if c.Key != "" && key != c.Key && !invited {
		return JoinRefusal{Code: ErrBadKey}
	}
	if c.InviteOnly && !invited && !c.IsExcepted(hostmask, did) {
		return JoinRefusal{Code: ErrInviteOnly}
	}
	if c.Limit > 0 && len(c.members) >= c.Limit && !invited {
		return JoinRefusal{Code: ErrChannelFull}
	}
	return JoinRefusal{Code: OK}
}

// banEntry returns the ban (not mute) entry holding a user out, nil when none does or a +e lifts it.
func (c *Channel) banEntry(hostmask, did string) *ListEntry {
	for i, e := range c.Bans {
		if _, mute := muteMask(e.Mask); !mute && MatchMask(e.Mask, hostmask, did) {
			if c.IsBanExcepted(hostmask, did) {
				return nil
			}
			entry := c.Bans[i]
			return &entry
		}
	}
	return nil
}

// AssistJoin is the verdict of a JOIN the DID would make now.
type AssistJoin struct {
	JoinRefusal
	Exists     bool
	Member     bool   // already a member (a JOIN changes nothing)
	Privileged string // "founder" or "server operator" when the checks do not apply
	Invited    bool
	Hostmask   string // the hostmask the masks were matched against ("" when not connected)
}

// Join evaluates a JOIN of the named (folded) channel by did with key, as Apply would for
// its first connected session; a DID without a session is matched by its DID alone.
func (d Diagnosis) Join(channel, did, key string) AssistJoin {
	c := d.s.channels[channel]
	if c == nil {
		return AssistJoin{}
	}
	v := AssistJoin{Exists: true}
	sid := ""
	oper := false
	if sessions := d.s.sessionsByDID(did); len(sessions) > 0 {
		se := sessions[0]
		sid, v.Hostmask, oper = se.ID, se.Hostmask(), se.Oper
		for _, other := range sessions {
			if c.members[other.ID] != nil {
				v.Member = true
			}
		}
	}
	switch {
	case did != "" && did == c.FounderDID:
		v.Privileged = "founder"
	case oper:
		v.Privileged = "server operator"
	}
	_, v.Invited = c.invites[InviteKey(sid, did)]
	if v.Privileged != "" {
		v.Code = OK
		return v
	}
	v.JoinRefusal = c.joinRefusal(v.Hostmask, did, key, v.Invited)
	return v
}

// AssistRecipient is one member of a channel and where it is connected.
type AssistRecipient struct {
	Nick     string
	Node     string // node name; for a remote member, the peer server's DID
	Remote   bool   // a user of a peer server (federation)
	Prefixes string
}

// Recipients lists the members of the named (folded) channel, local sessions by node and
// remote members by peer, sorted by nick.
func (d Diagnosis) Recipients(channel string) []AssistRecipient {
	c := d.s.channels[channel]
	if c == nil {
		return nil
	}
	var out []AssistRecipient
	for id, m := range c.members {
		if se := d.s.sessions[id]; se != nil {
			out = append(out, AssistRecipient{Nick: se.Nick, Node: se.Node, Prefixes: m.Prefixes(true)})
		}
	}
	for _, rm := range d.s.remoteMembers {
		if rm.channels[channel] {
			out = append(out, AssistRecipient{Nick: rm.Nick, Node: rm.Peer, Remote: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Nick < out[j].Nick })
	return out
}
