package irc

import (
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/raft/fsm"
	"github.com/palaver-chat/palaver/raft/fsm/meta"
)

func buildISupport(cfg Config) []string {
	tokens := []string{
		"CASEMAPPING=ascii", "CHANTYPES=#&", "PREFIX=(ohv)@%+", "CHANMODES=beI,k,l,CimnstE",
		"CHANLIMIT=#&:" + strconv.Itoa(fsm.MaxChannelsPerSession), "MAXLIST=beI:" + strconv.Itoa(fsm.MaxListEntries),
		"MODES=" + strconv.Itoa(maxModeArgs), "NICKLEN=64", "CHANNELLEN=64", "TOPICLEN=512",
		"AWAYLEN=300", "KICKLEN=300", "TARGMAX=PRIVMSG:4,NOTICE:4,TAGMSG:4,JOIN:,PART:,KICK:4",
		"NETWORK=" + strings.ReplaceAll(cfg.Network, " ", "_"), "CHATHISTORY=" + strconv.Itoa(maxHistoryLimit),
		"MSGREFTYPES=timestamp,msgid", "INVEX=I", "EXCEPTS=e", "EXTBAN=,m", "STATUSMSG=@%+", "UTF8ONLY", "WHOX", "ELIST=U", "BOT=B", "MONITOR=" + strconv.Itoa(maxMonitor), "NAMELEN=" + strconv.Itoa(fsm.MaxRealnameLen),
	}
	var out []string
	for len(tokens) > 0 {
		n := len(tokens)
		if n > 12 {
			n = 12
		}
		out = append(out, strings.Join(tokens[:n], " "))
		tokens = tokens[n:]
	}
	return out
}

// maxCounts remembers the most local and global users this node has counted (265/266).
type maxCounts struct{ local, global atomic.Int64 }

// observe raises the maxima to the current counts and returns them.
func (m *maxCounts) observe(local, global int) (int, int) {
	raise := func(v *atomic.Int64, n int64) int {
		for {
			cur := v.Load()
			if n <= cur {
				return int(cur)
			}
			if v.CompareAndSwap(cur, n) {
				return int(n)
			}
		}
	}
	return raise(&m.local, int64(local)), raise(&m.global, int64(global))
}

// lusers answers LUSERS with the standard texts. Channels are counted as LIST and
// /api/v1/channels count them: those with members or a topic. The deployment is one IRC
// server, however many nodes serve it; local users are those connected to this node.
func (c *client) lusers(rb *respBuf) {
	var users, opers, channels, local int
	c.s.state.Read(func(st *fsm.State) {
		users = st.SessionCount()
		for ch := range st.Channels() {
			if ch.MemberCount() > 0 || ch.Topic() != "" {
				channels++
			}
		}
		for se := range st.Sessions() {
			if se.Oper {
				opers++
			}
			if se.Node == c.s.cfg.NodeName {
				local++
			}
		}
	})
	maxLocal, maxGlobal := c.s.maxUsers.observe(local, users)
	n := strconv.Itoa
	rb.add(c.numericMsg("251", "There are "+n(users)+" users and 0 invisible on 1 servers"))
	rb.add(c.numericMsg("252", n(opers), "operator(s) online"))
	rb.add(c.numericMsg("254", n(channels), "channels formed"))
	rb.add(c.numericMsg("255", "I have "+n(local)+" clients and 0 servers"))
	rb.add(c.numericMsg("265", n(local), n(maxLocal), "Current local users "+n(local)+", max "+n(maxLocal)))
	rb.add(c.numericMsg("266", n(users), n(maxGlobal), "Current global users "+n(users)+", max "+n(maxGlobal)))
}

func (c *client) motd(rb *respBuf) {
	if len(c.s.cfg.MOTD) == 0 {
		rb.add(c.numericMsg("422", "MOTD File is missing"))
		return
	}
	rb.add(c.numericMsg("375", "- "+c.s.cfg.ServerName+" Message of the day - "))
	for _, l := range c.s.cfg.MOTD {
		rb.add(c.numericMsg("372", "- "+l))
	}
	rb.add(c.numericMsg("376", "End of /MOTD command."))
}

func handleMOTD(c *client, _ ircmsg.Message, rb *respBuf)   { c.motd(rb) }
func handleLUSERS(c *client, _ ircmsg.Message, rb *respBuf) { c.lusers(rb) }

func handleVERSION(c *client, _ ircmsg.Message, rb *respBuf) {
	rb.add(c.numericMsg("351", "palaver-"+c.s.cfg.Version, c.s.cfg.ServerName, "Palaver IRC server, node "+c.s.cfg.NodeName))
	for _, chunk := range c.s.isupport {
		rb.add(c.numericMsg("005", append(strings.Fields(chunk), "are supported by this server")...))
	}
}

func handleTIME(c *client, _ ircmsg.Message, rb *respBuf) {
	rb.add(c.numericMsg("391", c.s.cfg.ServerName, time.Now().UTC().Format(time.RFC1123)))
}

func handleAWAY(c *client, m ircmsg.Message, rb *respBuf) {
	text := truncate(m.Param(0), 300)
	if _, err := c.propose(fsm.Away{Session: c.id, Text: text}); err != nil {
		rb.add(c.failMsg("AWAY", "TEMPORARILY_UNAVAILABLE", "Try again"))
		return
	}
	if text == "" {
		rb.add(c.numericMsg("305", "You are no longer marked as being away"))
	} else {
		rb.add(c.numericMsg("306", "You have been marked as being away"))
	}
}

func handleOPER(c *client, m ircmsg.Message, rb *respBuf) {
	if len(c.s.cfg.Opers) == 0 {
		rb.add(c.numericMsg("491", "No O-lines for your host"))
		return
	}
	if !c.operAttempt(m.Param(0), m.Param(1), rb) {
		return
	}
	if _, err := c.propose(fsm.Oper{Session: c.id}); err != nil {
		rb.add(c.failMsg("OPER", "TEMPORARILY_UNAVAILABLE", "Try again"))
		return
	}
	c.oper = true
	rb.add(c.numericMsg("381", "You are now an IRC operator"))
}

func handleUSERHOST(c *client, m ircmsg.Message, rb *respBuf) {
	var parts []string
	c.s.state.Read(func(st *fsm.State) {
		for i, nick := range m.Params {
			if i >= 5 {
				break
			}
			se, ok := st.SessionByNick(nick)
			if !ok {
				continue
			}
			entry := se.Nick
			if se.Oper {
				entry += "*"
			}
			mark := "+"
			if se.Away != "" {
				mark = "-"
			}
			parts = append(parts, entry+"="+mark+se.User+"@"+se.Host)
		}
	})
	rb.add(c.numericMsg("302", strings.Join(parts, " ")))
}

func handleISON(c *client, m ircmsg.Message, rb *respBuf) {
	var online []string
	c.s.state.Read(func(st *fsm.State) {
		for _, p := range m.Params {
			for _, nick := range strings.Fields(p) {
				if se, ok := st.SessionByNick(nick); ok {
					online = append(online, se.Nick)
				}
			}
		}
	})
	rb.add(c.numericMsg("303", strings.Join(online, " ")))
}

// whoRow is one user in a WHO answer.
type whoRow struct {
	channel, user, host, server, nick, flags, realname, account string
}

// maxWhoRows bounds the users a mask WHO lists.
const maxWhoRows = 1000

// handleWHO answers WHO <channel|mask> [<options>] with 352 lines, or with WHOX 354 lines when
// the options are %<fields>[,<token>]. A mask is a case-insensitive glob over nicks, user names,
// hosts and real names, or a DID (its sessions).
func handleWHO(c *client, m ircmsg.Message, rb *respBuf) {
	mask := m.Param(0)
	if mask == "" {
		mask = "*"
	}
	var rows []whoRow
	multi := c.has(capMultiPrefix)
	c.s.state.Read(func(st *fsm.State) {
		flags := func(se *fsm.Session) string {
			f := "H"
			if se.Away != "" {
				f = "G"
			}
			if se.Oper {
				f += "*"
			}
			if se.Bot {
				f += "B"
			}
			return f
		}
		row := func(channel string, se *fsm.Session, prefixes string) whoRow {
			return whoRow{channel, se.User, se.Host, c.s.cfg.ServerName, se.Nick, flags(se) + prefixes, se.Realname, se.DID}
		}
		if strings.HasPrefix(mask, "#") || strings.HasPrefix(mask, "&") {
			ch, ok := st.Channel(fsm.Fold(mask))
			if !ok || (!ch.CanRead(c.id, c.currentDID()) && !c.oper) {
				return
			}
			inside := ch.IsMember(c.id) || c.oper
			for _, id := range ch.MemberIDs() {
				if se, ok := st.Session(id); ok && (inside || !se.Invisible) {
					rows = append(rows, row(ch.Name(), &se, ch.Prefixes(id, multi)))
				}
			}
			for _, m := range st.RemoteIn(ch.Name()) { // users of peer servers: their server is their host
				rows = append(rows, whoRow{channel: ch.Name(), user: m.User, host: m.Host, server: m.Host, nick: m.Nick, flags: "H"})
			}
			return
		}
		if se, ok := st.SessionByNick(mask); ok {
			rows = append(rows, row("*", &se, ""))
			return
		}
		if m := st.RemoteByNick(mask); m != nil {
			rows = append(rows, whoRow{channel: "*", user: m.User, host: m.Host, server: m.Host, nick: m.Nick, flags: "H"})
			return
		}
		for se := range st.Sessions() {
			if len(rows) == maxWhoRows {
				break
			}
			if se.Invisible && se.ID != c.id && !c.oper && !st.SharesChannel(se.ID, c.id) {
				continue // +i: a mask finds it only for those who share a channel with it
			}
			if fsm.MatchMask(mask, se.Nick, se.DID) || fsm.MatchMask(mask, se.User, "") || fsm.MatchMask(mask, se.Host, "") ||
				fsm.MatchMask(mask, se.Realname, "") {
				rows = append(rows, row("*", &se, ""))
			}
		}
		sortSlice(rows, func(a, b whoRow) bool { return a.nick < b.nick })
	})
	fields, token, whox := parseWHOX(m.Param(1))
	for _, r := range rows {
		if whox {
			rb.add(c.numericMsg("354", r.whox(fields, token)...))
			continue
		}
		rb.add(c.numericMsg("352", r.channel, r.user, r.host, r.server, r.nick, r.flags, "0 "+r.realname))
	}
	rb.add(c.numericMsg("315", mask, "End of /WHO list"))
}

// parseWHOX reads WHOX options: %<fields>[,<token>] (the token is up to three digits).
func parseWHOX(opt string) (fields, token string, ok bool) {
	_, spec, found := strings.Cut(opt, "%")
	if !found {
		return "", "", false
	}
	fields, token, _ = strings.Cut(spec, ",")
	if len(token) > 3 {
		token = token[:3]
	}
	return fields, token, true
}

// whox renders the WHOX fields asked for, in the order the specification fixes (tcuihsnfdlaor).
func (r whoRow) whox(fields, token string) []string {
	var out []string
	for _, f := range "tcuihsnfdlaor" {
		if !strings.ContainsRune(fields, f) {
			continue
		}
		switch f {
		case 't':
			out = append(out, token)
		case 'c':
			out = append(out, r.channel)
		case 'u':
			out = append(out, r.user)
		case 'i':
			out = append(out, "255.255.255.255")
		case 'h':
			out = append(out, r.host)
		case 's':
			out = append(out, r.server)
		case 'n':
			out = append(out, r.nick)
		case 'f':
			out = append(out, r.flags)
		case 'd':
			out = append(out, "0")
		case 'l':
			out = append(out, "0")
		case 'a':
			account := r.account
			if account == "" {
				account = "0"
			}
			out = append(out, account)
		case 'o':
			out = append(out, "n/a")
		case 'r':
			out = append(out, r.realname)
		}
	}
	return out
}

func handleWHOIS(c *client, m ircmsg.Message, rb *respBuf) {
	nick := m.Param(0)
	if len(m.Params) > 1 {
		nick = m.Param(1)
	}
	var found bool
	var se fsm.Session
	var channels []string
	var owner string // whose metadata the user's is
	multi := c.has(capMultiPrefix)
	c.s.state.Read(func(st *fsm.State) {
		p, ok := st.SessionByNick(nick)
		if !ok {
			return
		}
		found, se, owner = true, p, meta.Of(st).OwnerOf(p.ID)
		for _, name := range p.ChannelNames() {
			ch, ok := st.Channel(name)
			if !ok {
				continue
			}
			if !ch.CanRead(c.id, c.currentDID()) && !c.oper {
				continue
			}
			channels = append(channels, ch.Prefixes(p.ID, multi)+name)
		}
	})
	if !found && c.remoteWhois(rb, nick) {
		return
	}
	if !found {
		rb.add(c.numericMsg("401", nick, "No such nick/channel"))
		rb.add(c.numericMsg("318", nick, "End of /WHOIS list"))
		return
	}
	rb.add(c.numericMsg("311", se.Nick, se.User, se.Host, "*", se.Realname))
	if len(channels) > 0 {
		rb.add(c.numericMsg("319", se.Nick, strings.Join(channels, " ")))
	}
	rb.add(c.numericMsg("312", se.Nick, c.s.cfg.ServerName, "Palaver node "+se.Node))
	if se.Away != "" {
		rb.add(c.numericMsg("301", se.Nick, se.Away))
	}
	if se.Oper {
		rb.add(c.numericMsg("313", se.Nick, "is an IRC operator"))
	}
	if se.Bot {
		rb.add(c.numericMsg("335", se.Nick, "is a bot"))
	}
	if se.Secure {
		rb.add(c.numericMsg("671", se.Nick, "is using a secure connection"))
	}
	if se.DID != "" {
		rb.add(c.numericMsg("330", se.Nick, se.DID, "is logged in as"))
	}
	c.whoisMetadata(rb, se.Nick, owner)
	rb.add(c.numericMsg("318", se.Nick, "End of /WHOIS list"))
}

func sortedChannelNames(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sortSlice(out, func(a, b string) bool { return a < b })
	return out
}

// commands is the verb table: handler, minimum parameters, whether allowed before registration,
// whether exempt from the command flood limit.
var commands map[string]handler

func init() {
	commands = map[string]handler{
		"CAP":          {fn: handleCAP, minParams: 1, preReg: true, exempt: true},
		"AUTHENTICATE": {fn: handleAUTHENTICATE, minParams: 1, preReg: true, exempt: true},
		"NICK":         {fn: handleNICK, preReg: true, exempt: true},
		"USER":         {fn: handleUSER, minParams: 4, preReg: true, exempt: true},
		"PASS":         {fn: handlePASS, minParams: 1, preReg: true, exempt: true},
		"PING":         {fn: handlePING, minParams: 1, preReg: true, exempt: true},
		"PONG":         {fn: handlePONG, preReg: true, exempt: true},
		"QUIT":         {fn: handleQUIT, preReg: true, exempt: true},
		"JOIN":         {fn: handleJOIN, minParams: 1, exempt: true},
		"PART":         {fn: handlePART, minParams: 1},
		"TOPIC":        {fn: handleTOPIC, minParams: 1},
		"NAMES":        {fn: handleNAMES, exempt: true},
		"LIST":         {fn: handleLIST},
		"KICK":         {fn: handleKICK, minParams: 2},
		"INVITE":       {fn: handleINVITE, minParams: 2},
		"MODE":         {fn: handleMODE, minParams: 1, exempt: true},
		"PRIVMSG":      {fn: handlePRIVMSG, exempt: true},
		"NOTICE":       {fn: handleNOTICE, exempt: true},
		"TAGMSG":       {fn: handleTAGMSG, minParams: 1, exempt: true},
		"CHATHISTORY":  {fn: handleCHATHISTORY, exempt: true},
		"WHO":          {fn: handleWHO, exempt: true},
		"WHOIS":        {fn: handleWHOIS, minParams: 1, exempt: true},
		"USERHOST":     {fn: handleUSERHOST, minParams: 1},
		"ISON":         {fn: handleISON, minParams: 1},
		"AWAY":         {fn: handleAWAY},
		"OPER":         {fn: handleOPER, minParams: 2},
		"MOTD":         {fn: handleMOTD},
		"LUSERS":       {fn: handleLUSERS},
		"VERSION":      {fn: handleVERSION},
		"TIME":         {fn: handleTIME},
		"WHOWAS":       {fn: handleWHOWAS},
		"KILL":         {fn: handleKILL, minParams: 2},
		"WALLOPS":      {fn: handleWALLOPS, minParams: 1, exempt: true},
		"LINKS":        {fn: handleLINKS},
		"MARKREAD":     {fn: handleMARKREAD},
		"BATCH":        {fn: handleBATCH, minParams: 1, exempt: true},
		"INFO":         {fn: handleINFO},
		"HELP":         {fn: handleHELP},
		"REDACT":       {fn: handleREDACT, minParams: 2},
		"SETNAME":      {fn: handleSETNAME, minParams: 1},
		"HELPOP":       {fn: handleHELP},
		"PIN":          {fn: handlePIN, minParams: 2},
		"UNPIN":        {fn: handleUNPIN, minParams: 2},
		"PINS":         {fn: handlePINS, minParams: 1},
		"MSGSIG":       {fn: handleMSGSIG, minParams: 1, preReg: true},
		"MONITOR":      {fn: handleMONITOR, minParams: 1},
		"METADATA":     {fn: handleMETADATA, minParams: 2, preReg: true},
		"RENAME":       {fn: handleRENAME, minParams: 2},
	}
}
