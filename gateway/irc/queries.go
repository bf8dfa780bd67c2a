package irc

import (
	"strconv"
	"strings"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/raft/fsm"
)

func buildISupport(cfg Config) []string {
	tokens := []string{
		"CASEMAPPING=ascii", "CHANTYPES=#&", "PREFIX=(ohv)@%+", "CHANMODES=bI,k,,imntE",
		"CHANLIMIT=#&:" + strconv.Itoa(fsm.MaxChannelsPerSession), "MAXLIST=bI:" + strconv.Itoa(fsm.MaxListEntries),
		"MODES=" + strconv.Itoa(maxModeArgs), "NICKLEN=64", "CHANNELLEN=64", "TOPICLEN=512",
		"AWAYLEN=300", "KICKLEN=300", "TARGMAX=PRIVMSG:4,NOTICE:4,TAGMSG:4,JOIN:,PART:,KICK:4",
		"NETWORK=" + strings.ReplaceAll(cfg.Network, " ", "_"), "CHATHISTORY=" + strconv.Itoa(maxHistoryLimit),
		"MSGREFTYPES=timestamp,msgid", "EXCEPTS", "INVEX=I", "UTF8ONLY",
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

func (c *client) lusers(rb *respBuf) {
	var users, opers, channels, local int
	c.s.state.Read(func(st *fsm.State) {
		users, channels = len(st.Sessions), len(st.Channels)
		for _, se := range st.Sessions {
			if se.Oper {
				opers++
			}
			if se.Node == c.s.cfg.NodeName {
				local++
			}
		}
	})
	rb.add(c.numericMsg("251", "There are "+strconv.Itoa(users)+" users on the network"))
	rb.add(c.numericMsg("252", strconv.Itoa(opers), "operator(s) online"))
	rb.add(c.numericMsg("254", strconv.Itoa(channels), "channels formed"))
	rb.add(c.numericMsg("255", "I have "+strconv.Itoa(local)+" clients"))
	rb.add(c.numericMsg("265", strconv.Itoa(local), strconv.Itoa(local), "Current local users"))
	rb.add(c.numericMsg("266", strconv.Itoa(users), strconv.Itoa(users), "Current global users"))
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
			se := st.SessionByNick(nick)
			if se == nil {
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
				if se := st.SessionByNick(nick); se != nil {
					online = append(online, se.Nick)
				}
			}
		}
	})
	rb.add(c.numericMsg("303", strings.Join(online, " ")))
}

func handleWHO(c *client, m ircmsg.Message, rb *respBuf) {
	mask := m.Param(0)
	type row struct{ channel, user, host, server, nick, flags, realname string }
	var rows []row
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
			return f
		}
		if strings.HasPrefix(mask, "#") || strings.HasPrefix(mask, "&") {
			ch := st.Channels[fsm.Fold(mask)]
			if ch == nil || (!ch.CanRead(c.id, c.currentDID()) && !c.oper) {
				return
			}
			for _, id := range ch.MemberIDs() {
				se := st.Sessions[id]
				if se == nil {
					continue
				}
				rows = append(rows, row{ch.Name, se.User, se.Host, c.s.cfg.ServerName, se.Nick, flags(se) + ch.Members[id].Prefixes(multi), se.Realname})
			}
			for _, m := range st.RemoteIn(ch.Name) { // users of peer servers: their server is their host
				rows = append(rows, row{ch.Name, m.User, m.Host, m.Host, m.Nick, "H", ""})
			}
			return
		}
		if se := st.SessionByNick(mask); se != nil {
			rows = append(rows, row{"*", se.User, se.Host, c.s.cfg.ServerName, se.Nick, flags(se), se.Realname})
		} else if m := st.RemoteByNick(mask); m != nil {
			rows = append(rows, row{"*", m.User, m.Host, m.Host, m.Nick, "H", ""})
		}
	})
	for _, r := range rows {
		rb.add(c.numericMsg("352", r.channel, r.user, r.host, r.server, r.nick, r.flags, "0 "+r.realname))
	}
	end := mask
	if end == "" {
		end = "*"
	}
	rb.add(c.numericMsg("315", end, "End of /WHO list"))
}

func handleWHOIS(c *client, m ircmsg.Message, rb *respBuf) {
	nick := m.Param(0)
	if len(m.Params) > 1 {
		nick = m.Param(1)
	}
	var found bool
	var se fsm.Session
	var channels []string
	multi := c.has(capMultiPrefix)
	c.s.state.Read(func(st *fsm.State) {
		p := st.SessionByNick(nick)
		if p == nil {
			return
		}
		found, se = true, *p
		for _, name := range sortedChannelNames(p.Channels) {
			ch := st.Channels[name]
			if ch == nil {
				continue
			}
			if !ch.CanRead(c.id, c.currentDID()) && !c.oper {
				continue
			}
			channels = append(channels, ch.Members[p.ID].Prefixes(multi)+name)
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
	if se.Secure {
		rb.add(c.numericMsg("671", se.Nick, "is using a secure connection"))
	}
	if se.DID != "" {
		rb.add(c.numericMsg("330", se.Nick, se.DID, "is logged in as"))
	}
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
		"PIN":          {fn: handlePIN, minParams: 2},
		"UNPIN":        {fn: handleUNPIN, minParams: 2},
		"PINS":         {fn: handlePINS, minParams: 1},
		"MSGSIG":       {fn: handleMSGSIG, minParams: 1, preReg: true},
	}
}
