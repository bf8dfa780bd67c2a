package irc

import (
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node/linkroute"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// codeReply renders the common refusal codes of channel commands.
func (c *client) codeReply(rb *respBuf, code fsm.Code, channel, target string) {
	switch code {
	case fsm.ErrNoSuchChannel:
		rb.add(c.numericMsg("403", channel, "No such channel"))
	case fsm.ErrNotOnChannel:
		rb.add(c.numericMsg("442", channel, "You're not on that channel"))
	case fsm.ErrUserNotInChannel:
		rb.add(c.numericMsg("441", target, channel, "They aren't on that channel"))
	case fsm.ErrUserOnChannel:
		rb.add(c.numericMsg("443", target, channel, "is already on channel"))
	case fsm.ErrChanOpNeeded:
		rb.add(c.numericMsg("482", channel, "You're not channel operator"))
	case fsm.ErrBanned:
		rb.add(c.numericMsg("474", channel, "Cannot join channel (+b)"))
	case fsm.ErrInviteOnly:
		rb.add(c.numericMsg("473", channel, "Cannot join channel (+i)"))
	case fsm.ErrBadKey:
		rb.add(c.numericMsg("475", channel, "Cannot join channel (+k)"))
	case fsm.ErrChannelFull:
		rb.add(c.numericMsg("471", channel, "Cannot join channel (+l)"))
	case fsm.ErrTooManyChannels:
		rb.add(c.numericMsg("405", channel, "You have joined too many channels"))
	case fsm.ErrTooManyFounded:
		rb.add(c.numericMsg("405", channel, "You have founded too many channels (at most "+strconv.Itoa(fsm.MaxFoundedPerDID)+"): leave one of yours and let it expire"))
	case fsm.ErrListFull:
		rb.add(c.numericMsg("478", channel, target, "Channel list is full"))
	case fsm.ErrBadName:
		rb.add(c.numericMsg("479", channel, "Illegal channel name"))
	case fsm.ErrTopicTooLong:
		rb.add(c.failMsg("TOPIC", "TOO_LONG", "Topic is too long (max 512 bytes)", channel))
	case fsm.ErrNoSuchSession:
		rb.add(c.numericMsg("401", target, "No such nick/channel"))
	default:
		rb.add(c.failMsg("*", "INTERNAL_ERROR", "The change could not be applied", channel))
	}
}

// checkChannelName answers 479 for a name that is too long or malformed and returns the folded name.
func (c *client) checkChannelName(rb *respBuf, name string) (string, bool) {
	if len(name) > fsm.MaxChannelLen {
		rb.add(c.numericMsg("479", name, "Channel name too long (max 64 characters)"))
		return "", false
	}
	if !validChannel(name) {
		rb.add(c.numericMsg("479", name, "Illegal channel name"))
		return "", false
	}
	return fsm.Fold(name), true
}

func handleJOIN(c *client, m ircmsg.Message, rb *respBuf) {
	if m.Param(0) == "0" {
		var chans []string
		c.s.state.Read(func(st *fsm.State) {
			if se, ok := st.Session(c.id); ok {
				for ch := range se.Channels() {
					chans = append(chans, ch)
				}
			}
		})
		for _, ch := range chans {
			if res, err := c.propose(fsm.Part{Session: c.id, Channel: ch, Reason: "Left all channels"}); err == nil && res.Code != fsm.OK {
				c.codeReply(rb, res.Code, ch, "")
			}
		}
		return
	}
	names := strings.Split(m.Param(0), ",")
	keys := strings.Split(m.Param(1), ",")
	for i, raw := range names {
		if raw == "" {
			continue
		}
		name, ok := c.checkChannelName(rb, raw)
		if !ok {
			continue
		}
		key := ""
		if i < len(keys) {
			key = keys[i]
		}
		if c.redirectJoin(rb, raw, name, key) {
			continue
		}
		c.joinOne(rb, name, key)
	}
}

// joinOne joins the client to one channel (a folded, valid name) and answers it.
func (c *client) joinOne(rb *respBuf, name, key string) {
	wasUnsure := c.unsure.take(name)
	res, err := c.propose(fsm.Join{Session: c.id, Channel: name, Key: key})
	if err != nil {
		c.joinOutcomeUnknown(rb, name)
		return
	}
	switch res.Code {
	case fsm.OK:
		c.afterJoin(rb, name)
	case fsm.NoChange:
		if wasUnsure { // the earlier JOIN applied late, during this one: its echo came without names
			c.afterJoin(rb, name)
		}
	default:
		c.codeReply(rb, res.Code, name, "")
	}
}

// joinOutcomeUnknown answers a JOIN whose proposal ended without a result (its deadline passed,
// the node is stopping): the entry may still be applied. The channel is remembered, so that when
// the JOIN is applied after all the client gets the topic and names with its echo (see
// renderJoin); if the echo was rendered already, they are sent now.
func (c *client) joinOutcomeUnknown(rb *respBuf, name string) {
	rb.add(c.failMsg("JOIN", "TEMPORARILY_UNAVAILABLE", "The join's outcome is unknown: it may still take effect", name))
	c.unsure.mark(name)
	if c.s.rendered.joinRendered(name, c.id) && c.unsure.take(name) {
		c.afterJoin(rb, name)
	}
}

// lateJoinReplies sends the topic and names to a client whose JOIN was applied after it was told
// the outcome was unknown. The renderer calls it right after the JOIN echo: the replies follow the
// echo into the running command's replies, or straight to the connection when none runs.
func (c *client) lateJoinReplies(channel string) {
	tmp := &respBuf{c: c}
	c.sendTopic(tmp, channel, false)
	c.sendNames(tmp, channel)
	c.rbMu.Lock()
	if rb := c.rb; rb != nil {
		rb.msgs = append(rb.msgs, tmp.msgs...)
		c.rbMu.Unlock()
		return
	}
	c.rbMu.Unlock()
	lines := make([][]byte, 0, len(tmp.msgs))
	for i := range tmp.msgs {
		lines = append(lines, tmp.msgs[i].AppendTo(nil))
	}
	c.q.enqueue(lines...)
}

// unsureJoins is the channels of a client's JOINs whose outcome it was told is unknown.
type unsureJoins struct {
	// lock tier 9 (leaf)
	mu       sync.Mutex
	channels map[string]bool
}

func (u *unsureJoins) mark(channel string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.channels == nil {
		u.channels = map[string]bool{}
	}
	u.channels[channel] = true
}

// take forgets channel and reports whether it was marked.
func (u *unsureJoins) take(channel string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.channels[channel] {
		return false
	}
	delete(u.channels, channel)
	return true
}

// afterJoin sends the topic, the names and the recent history to a client that just joined.
func (c *client) afterJoin(rb *respBuf, channel string) {
	c.sendTopic(rb, channel, false)
	c.joinMarker(rb, channel)
	c.sendNames(rb, channel)
	// Clients with draft/chathistory fetch history themselves; the spec asks servers not to push it.
	if c.s.cfg.JoinHistory > 0 && c.s.history != nil && !c.has(capChathistory) {
		c.replayLatest(rb, channel, c.s.cfg.JoinHistory)
	}
}

func handlePART(c *client, m ircmsg.Message, rb *respBuf) {
	for _, raw := range strings.Split(m.Param(0), ",") {
		if raw == "" {
			continue
		}
		name := fsm.Fold(raw)
		res, err := c.propose(fsm.Part{Session: c.id, Channel: name, Reason: truncate(m.Param(1), 300)})
		if err != nil {
			rb.add(c.failMsg("PART", "TEMPORARILY_UNAVAILABLE", "Try again", name))
			continue
		}
		if res.Code != fsm.OK {
			c.codeReply(rb, res.Code, raw, "")
		}
	}
}

func handleTOPIC(c *client, m ircmsg.Message, rb *respBuf) {
	name := fsm.Fold(m.Param(0))
	if len(m.Params) < 2 {
		c.sendTopic(rb, name, true)
		return
	}
	var member, exists bool
	c.s.state.Read(func(st *fsm.State) {
		if ch, ok := st.Channel(name); ok {
			exists = true
			member = ch.IsMember(c.id)
		}
	})
	if !exists {
		rb.add(c.numericMsg("403", m.Param(0), "No such channel"))
		return
	}
	if !member && !c.oper {
		rb.add(c.numericMsg("442", m.Param(0), "You're not on that channel"))
		return
	}
	if c.federatedTopic(rb, m, name) {
		return
	}
	res, err := c.propose(fsm.Topic{Session: c.id, Channel: name, Text: m.Param(1)})
	if err != nil {
		rb.add(c.failMsg("TOPIC", "TEMPORARILY_UNAVAILABLE", "Try again", name))
		return
	}
	if res.Code != fsm.OK {
		c.codeReply(rb, res.Code, m.Param(0), "")
	}
}

// sendTopic sends 332/333 (or 331 when asked and no topic is set).
func (c *client) sendTopic(rb *respBuf, name string, asked bool) {
	var topic, by string
	var at int64
	var exists, visible bool
	c.s.state.Read(func(st *fsm.State) {
		if ch, ok := st.Channel(name); ok {
			exists = true
			visible = ch.CanRead(c.id, c.currentDID()) || c.oper
			topic, by, at = ch.Topic(), ch.TopicBy(), ch.TopicAt()
		}
	})
	switch {
	case !exists:
		if asked {
			rb.add(c.numericMsg("403", name, "No such channel"))
		}
	case !visible:
		if asked {
			rb.add(c.numericMsg("442", name, "You're not on that channel"))
		}
	case topic == "":
		if asked {
			rb.add(c.numericMsg("331", name, "No topic is set"))
		}
	default:
		rb.add(c.numericMsg("332", name, topic))
		rb.add(c.numericMsg("333", name, by, strconv.FormatInt(at/1000, 10)))
	}
}

func handleNAMES(c *client, m ircmsg.Message, rb *respBuf) {
	if m.Param(0) == "" {
		rb.add(c.numericMsg("366", "*", "End of /NAMES list"))
		return
	}
	for _, raw := range strings.Split(m.Param(0), ",") {
		c.sendNames(rb, fsm.Fold(raw))
	}
}

// sendNames sends 353 lines and 366. Members of a restricted channel are listed to members only.
func (c *client) sendNames(rb *respBuf, name string) {
	multi, userhost := c.has(capMultiPrefix), c.has(capUserhostInNames)
	var entries []string
	var symbol = "="
	c.s.state.Read(func(st *fsm.State) {
		ch, ok := st.Channel(name)
		if !ok {
			return
		}
		// "@" for a secret channel, "=" for every other: "*" would announce a private (+p) mode
		// that does not exist.
		if !ch.Discoverable() && !ch.CanRead(c.id, c.currentDID()) && !c.oper {
			return
		}
		if ch.Secret() {
			symbol = "@"
		}
		// In map order: NAMES has no defined order, and sorting every joiner's list (O(n log n)
		// under the state's read lock, which Apply waits for) was a third of the server's CPU
		// when 5,000 clients joined one channel (B5).
		entries = make([]string, 0, ch.MemberCount())
		for id, m := range ch.Members() {
			se, ok := st.Session(id)
			if !ok {
				continue
			}
			if userhost {
				entries = append(entries, m.Prefixes(multi)+se.Hostmask())
			} else {
				entries = append(entries, m.Prefixes(multi)+se.Nick)
			}
		}
		for _, m := range st.RemoteIn(name) { // users of peer servers (federation)
			entries = append(entries, m.Nick)
		}
	})
	const budget = 400
	var line strings.Builder
	for _, e := range entries {
		if line.Len()+len(e)+1 > budget {
			rb.add(c.numericMsg("353", symbol, name, line.String()))
			line.Reset()
		}
		if line.Len() > 0 {
			line.WriteByte(' ')
		}
		line.WriteString(e)
	}
	if line.Len() > 0 {
		rb.add(c.numericMsg("353", symbol, name, line.String()))
	}
	rb.add(c.numericMsg("366", name, "End of /NAMES list"))
}

func handleLIST(c *client, m ircmsg.Message, rb *respBuf) {
	type row struct {
		name, topic, modes string
		count              int
	}
	// LIST [channel,…] and ELIST=U's user-count conditions, ">n" (more than n members) and "<n"
	// (fewer than n), which may be combined; a condition that is not a number is ignored.
	var filter map[string]bool
	more, fewer := -1, math.MaxInt
	for _, term := range strings.Split(m.Param(0), ",") {
		if term == "" {
			continue
		}
		if term[0] == '>' || term[0] == '<' {
			if n, err := strconv.Atoi(term[1:]); err == nil && term[0] == '>' {
				more = max(more, n)
			} else if err == nil {
				fewer = min(fewer, n)
			}
			continue
		}
		if filter == nil {
			filter = map[string]bool{}
		}
		filter[fsm.Fold(term)] = true
	}
	var rows []row
	c.s.state.Read(func(st *fsm.State) {
		for ch := range st.Channels() {
			if filter != nil && !filter[ch.Name()] {
				continue
			}
			if !ch.CanRead(c.id, c.currentDID()) && !c.oper {
				continue
			}
			if ch.MemberCount() == 0 && ch.Topic() == "" || ch.MemberCount() <= more || ch.MemberCount() >= fewer {
				continue
			}
			rows = append(rows, row{name: ch.Name(), topic: ch.Topic(), modes: ch.ModeString(), count: ch.MemberCount()})
		}
	})
	sortSlice(rows, func(a, b row) bool {
		if a.count != b.count {
			return a.count > b.count
		}
		return a.name < b.name
	})
	rb.add(c.numericMsg("321", "Channel", "Users  Name"))
	for _, r := range rows {
		rb.add(c.numericMsg("322", r.name, strconv.Itoa(r.count), "["+r.modes+"] "+r.topic))
	}
	rb.add(c.numericMsg("323", "End of /LIST"))
}

// handleKICK kicks users: KICK #a,#b x,y pairs channels and users (one channel kicks every
// user listed).
func handleKICK(c *client, m ircmsg.Message, rb *respBuf) {
	channels, nicks := strings.Split(m.Param(0), ","), strings.Split(m.Param(1), ",")
	if len(channels) > 1 && len(channels) != len(nicks) {
		rb.add(c.numericMsg("461", "KICK", "Not enough parameters"))
		return
	}
	for i, nick := range nicks {
		channel := channels[0]
		if len(channels) > 1 {
			channel = channels[i]
		}
		c.kick(rb, channel, nick, m.Param(2))
	}
}

// kick kicks one user from one channel.
func (c *client) kick(rb *respBuf, channel, nick, reason string) {
	name := fsm.Fold(channel)
	reason = truncate(reason, 300)
	if reason == "" {
		reason = c.nick
	}
	target := c.sessionIDByNick(nick)
	if target == "" && c.federatedTarget(rb, linkroute.Kick, "KICK", name, nick, reason) {
		return
	}
	if target == "" {
		rb.add(c.numericMsg("401", nick, "No such nick/channel"))
		return
	}
	res, err := c.propose(fsm.Kick{Session: c.id, Channel: name, Target: target, Reason: reason})
	if err != nil {
		rb.add(c.failMsg("KICK", "TEMPORARILY_UNAVAILABLE", "Try again", name))
		return
	}
	if res.Code != fsm.OK {
		c.codeReply(rb, res.Code, channel, nick)
	}
}

func handleINVITE(c *client, m ircmsg.Message, rb *respBuf) {
	nick, name := m.Param(0), fsm.Fold(m.Param(1))
	target := c.sessionIDByNick(nick)
	if target == "" && c.federatedTarget(rb, linkroute.Invite, "INVITE", name, nick, "") {
		return
	}
	if target == "" {
		rb.add(c.numericMsg("401", nick, "No such nick/channel"))
		return
	}
	res, err := c.propose(fsm.Invite{Session: c.id, Channel: name, Target: target})
	if err != nil {
		rb.add(c.failMsg("INVITE", "TEMPORARILY_UNAVAILABLE", "Try again", name))
		return
	}
	if res.Code != fsm.OK {
		c.codeReply(rb, res.Code, m.Param(1), nick)
		return
	}
	rb.add(c.numericMsg("341", nick, name))
}

// sessionIDByNick finds the session using a nick (or, for a did: string, one of its sessions).
func (c *client) sessionIDByNick(nick string) string {
	var id string
	c.s.state.Read(func(st *fsm.State) {
		if strings.HasPrefix(nick, "did:") {
			if list := st.SessionsByDID(nick); len(list) > 0 {
				id = list[0].ID
			}
			return
		}
		if se, ok := st.SessionByNick(nick); ok {
			id = se.ID
		}
	})
	return id
}
