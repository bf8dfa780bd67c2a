package irc

import (
	"strconv"
	"strings"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/raft/fsm"
)

const maxModeArgs = 6 // ISUPPORT MODES

// userModes are the user modes 004 RPL_MYINFO lists: B bot, i invisible, o operator, w WALLOPS.
const userModes = "Biow"

func handleMODE(c *client, m ircmsg.Message, rb *respBuf) {
	target := m.Param(0)
	if !strings.HasPrefix(target, "#") && !strings.HasPrefix(target, "&") {
		userMode(c, m, rb)
		return
	}
	name := fsm.Fold(target)
	var exists, member bool
	var modes string
	var created int64
	var key string
	var limit int
	c.s.state.Read(func(st *fsm.State) {
		if ch, ok := st.Channel(name); ok {
			exists, member = true, ch.CanRead(c.id, c.currentDID()) && (!ch.Discoverable() || ch.IsMember(c.id))
			modes, created, key, limit = ch.ModeString(), ch.CreatedAt(), ch.Key(), ch.Limit()
		}
	})
	if !exists {
		rb.add(c.numericMsg("403", target, "No such channel"))
		return
	}
	if len(m.Params) < 2 {
		params := []string{name, modes} // parameters in the order of the letters: k, then l
		if key != "" && (member || c.oper) {
			params = append(params, key)
		}
		if limit > 0 {
			params = append(params, strconv.Itoa(limit))
		}
		rb.add(c.numericMsg("324", params...))
		rb.add(c.numericMsg("329", name, strconv.FormatInt(created/1000, 10)))
		return
	}
	changes, lists := c.parseModeChanges(rb, name, m.Params[1], m.Params[2:])
	for _, l := range lists {
		c.sendList(rb, name, l)
	}
	if c.s.links.Linked(name) {
		changes = c.didOpGrants(rb, name, changes)
		changes = c.federatedModes(rb, name, changes)
	}
	if len(changes) == 0 {
		return
	}
	res, err := c.propose(fsm.Mode{Session: c.id, Channel: name, Changes: changes})
	if err != nil {
		rb.add(c.failMsg("MODE", "TEMPORARILY_UNAVAILABLE", "Try again", name))
		return
	}
	if res.Code == fsm.ErrNoSuchChannel || res.Code == fsm.ErrNoSuchSession {
		c.codeReply(rb, res.Code, target, "")
		return
	}
	for _, f := range res.Failed {
		switch f.Code {
		case fsm.ErrInvalid:
			arg := f.Change.Arg
			if f.Change.Mode == "k" {
				arg = "*" // a refused key is not echoed
			}
			rb.add(c.numericMsg("696", name, f.Change.Mode, arg, "Invalid mode parameter"))
		case fsm.ErrListFull:
			rb.add(c.numericMsg("478", name, f.Change.Arg, "Channel ban list is full"))
		default:
			c.codeReply(rb, f.Code, name, f.Change.Arg)
		}
	}
}

// parseModeChanges turns a mode string and its arguments into changes, resolving nicks to session
// ids; list queries (b, e or I without an argument) are returned separately.
func (c *client) parseModeChanges(rb *respBuf, channel, modestr string, args []string) ([]fsm.ModeChange, []byte) {
	var changes []fsm.ModeChange
	var lists []byte
	add := true
	used := 0
	next := func() (string, bool) {
		if len(args) == 0 || used >= maxModeArgs {
			return "", false
		}
		a := args[0]
		args = args[1:]
		used++
		return a, true
	}
	for i := 0; i < len(modestr); i++ {
		ch := modestr[i]
		switch ch {
		case '+':
			add = true
		case '-':
			add = false
		case 'o', 'h', 'v':
			nick, ok := next()
			if !ok {
				rb.add(c.numericMsg("461", "MODE", "Not enough parameters"))
				continue
			}
			id := c.sessionIDByNick(nick)
			if id == "" && ch == 'o' && strings.HasPrefix(nick, "did:") && c.s.links.Linked(channel) {
				// A DID op of a linked channel, whether or not the DID has a session here.
				changes = append(changes, fsm.ModeChange{Add: add, Mode: "o", Arg: nick})
				continue
			}
			if id == "" {
				rb.add(c.numericMsg("401", nick, "No such nick/channel"))
				continue
			}
			changes = append(changes, fsm.ModeChange{Add: add, Mode: string(ch), Target: id, Arg: nick})
		case 'b', 'e', 'I':
			mask, ok := next()
			if !ok {
				lists = append(lists, ch)
				continue
			}
			changes = append(changes, fsm.ModeChange{Add: add, Mode: string(ch), Arg: mask})
		case 'k':
			if add {
				k, ok := next()
				if !ok {
					rb.add(c.numericMsg("461", "MODE", "Not enough parameters"))
					continue
				}
				changes = append(changes, fsm.ModeChange{Add: true, Mode: "k", Arg: k})
			} else {
				changes = append(changes, fsm.ModeChange{Add: false, Mode: "k"})
			}
		case 'l':
			if !add {
				changes = append(changes, fsm.ModeChange{Add: false, Mode: "l"})
				continue
			}
			limit, ok := next()
			if !ok {
				rb.add(c.numericMsg("461", "MODE", "Not enough parameters"))
				continue
			}
			changes = append(changes, fsm.ModeChange{Add: true, Mode: "l", Arg: limit})
		case 'i', 't', 'n', 'm', 'E', 's', 'C':
			changes = append(changes, fsm.ModeChange{Add: add, Mode: string(ch)})
		default:
			rb.add(c.numericMsg("472", string(ch), "is unknown mode char to me"))
		}
	}
	return changes, lists
}

// sendList answers a ban (367/368), ban-exception (348/349) or invite-exception (346/347) list
// query.
func (c *client) sendList(rb *respBuf, channel string, which byte) {
	var entries []fsm.ListEntry
	allowed := false
	c.s.state.Read(func(st *fsm.State) {
		ch, ok := st.Channel(channel)
		if !ok {
			return
		}
		allowed = ch.CanRead(c.id, c.currentDID()) || c.oper
		if !allowed {
			return
		}
		src := ch.Bans()
		switch which {
		case 'I':
			src = ch.Exceptions()
		case 'e':
			src = ch.BanExceptions()
		}
		entries = append(entries, src...)
	})
	item, end, endText := "367", "368", "End of channel ban list"
	switch which {
	case 'I':
		item, end, endText = "346", "347", "End of channel invite exception list"
	case 'e':
		item, end, endText = "348", "349", "End of channel exception list"
	}
	for _, e := range entries {
		rb.add(c.numericMsg(item, channel, e.Mask, e.SetBy, strconv.FormatInt(e.SetAt/1000, 10)))
	}
	rb.add(c.numericMsg(end, channel, endText))
}

// userMode handles MODE on a nick: a user may query their own modes and set or clear +B (bot)
// and +i (invisible), both replicated, and +w (WALLOPS, kept by the connection: wallops.go); any
// other letter is answered 501 and changes nothing.
func userMode(c *client, m ircmsg.Message, rb *respBuf) {
	if fsm.Fold(m.Param(0)) != fsm.Fold(c.nick) {
		rb.add(c.numericMsg("502", "Can't change mode for other users"))
		return
	}
	var bot, invisible bool
	c.s.state.Read(func(st *fsm.State) {
		if se, ok := st.Session(c.id); ok {
			bot, invisible = se.Bot, se.Invisible
		}
	})
	if len(m.Params) < 2 {
		modes := "+"
		if invisible {
			modes += "i"
		}
		if c.oper {
			modes += "o"
		}
		if c.wallops.Load() {
			modes += "w"
		}
		if bot {
			modes += "B"
		}
		rb.add(c.numericMsg("221", modes))
		return
	}
	wallops := c.wallops.Load()
	add, wantBot, wantInvisible, wantWallops := true, bot, invisible, wallops
	for _, r := range m.Params[1] {
		switch r {
		case '+', '-':
			add = r == '+'
		case 'B':
			wantBot = add
		case 'i':
			wantInvisible = add
		case 'w':
			wantWallops = add
		default:
			rb.add(c.numericMsg("501", "Unknown MODE flag"))
			return
		}
	}
	var changes []string // "+i", "-B", …
	if wantInvisible != invisible {
		res, err := c.propose(fsm.SetInvisible{Session: c.id, Invisible: wantInvisible})
		if err != nil || res.Code != fsm.OK {
			rb.add(c.failMsg("MODE", "TEMPORARILY_UNAVAILABLE", upgradingText(err, "Try again"), c.nick))
			return
		}
		changes = append(changes, modeChange(wantInvisible, 'i'))
	}
	if wantWallops != wallops {
		c.wallops.Store(wantWallops)
		changes = append(changes, modeChange(wantWallops, 'w'))
	}
	if wantBot != bot {
		res, err := c.propose(fsm.SetBot{Session: c.id, Bot: wantBot})
		if err != nil || res.Code != fsm.OK {
			rb.add(c.failMsg("MODE", "TEMPORARILY_UNAVAILABLE", "Try again", c.nick))
		} else {
			changes = append(changes, modeChange(wantBot, 'B'))
		}
	}
	if len(changes) > 0 {
		rb.add(ircmsg.Message{Source: c.nick, Command: "MODE", Params: []string{c.nick, strings.Join(changes, "")}})
	}
}

func modeChange(add bool, letter rune) string {
	if add {
		return "+" + string(letter)
	}
	return "-" + string(letter)
}
