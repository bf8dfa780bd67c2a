package irc

import (
	"strconv"
	"strings"
	"sync"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// MONITOR (IRCv3 monitor) and extended-monitor.
//
// A client keeps a list of nicks; it is told when one of them comes online (730 RPL_MONONLINE)
// or goes offline (731 RPL_MONOFFLINE), wherever in the cluster that session lives: the
// notifications are rendered from the applied session events (a registration, a nick change, the
// end of a session), which every node renders. A user of a peer server counts as online while
// this cluster knows of it through federation presence, that is while it is in at least one
// channel linked with its server (fsm.PresenceChange): a peer tells nothing of its users outside
// linked channels, so one who is on its server but in none of them is reported offline. With
// extended-monitor it also gets the AWAY,
// ACCOUNT and SETNAME lines of a monitored user it shares no channel with, when it negotiated the
// capability that carries each (away-notify, account-notify, setname).
//
// The lists live on this node only (they belong to the connection) in an index of watchers by
// folded nick, so an event costs one map look-up however many clients and lists there are.

// maxMonitor bounds the nicks one client monitors (ISUPPORT MONITOR=).
const maxMonitor = 100

// monitorLineBudget bounds the comma-separated list of one 730/731/732 line, well inside the
// 512-byte line with the numeric's prefix.
const monitorLineBudget = 400

// monitorIndex holds every local client's MONITOR list.
type monitorIndex struct {
	// lock tier 9 (leaf): guards the maps only
	mu       sync.Mutex
	watchers map[string]map[*client]struct{} // folded nick → clients monitoring it
	lists    map[*client]map[string]string   // client → folded nick → the nick as the client gave it
}

// add puts nicks on c's list. It returns the nicks added (or already there), and those refused
// because the list is full.
func (x *monitorIndex) add(c *client, nicks []string) (added, refused []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.lists == nil {
		x.lists = map[*client]map[string]string{}
		x.watchers = map[string]map[*client]struct{}{}
	}
	list := x.lists[c]
	for i, nick := range nicks {
		folded := fsm.Fold(nick)
		if _, ok := list[folded]; ok {
			added = append(added, nick)
			continue
		}
		if len(list) >= maxMonitor {
			return added, nicks[i:]
		}
		if list == nil {
			list = map[string]string{}
			x.lists[c] = list
		}
		list[folded] = nick
		w := x.watchers[folded]
		if w == nil {
			w = map[*client]struct{}{}
			x.watchers[folded] = w
		}
		w[c] = struct{}{}
		added = append(added, nick)
	}
	return added, nil
}

// remove takes nicks off c's list; no nicks clears it.
func (x *monitorIndex) remove(c *client, nicks []string, all bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	list := x.lists[c]
	if list == nil {
		return
	}
	drop := func(folded string) {
		delete(list, folded)
		if w := x.watchers[folded]; w != nil {
			delete(w, c)
			if len(w) == 0 {
				delete(x.watchers, folded)
			}
		}
	}
	if all {
		for folded := range list {
			drop(folded)
		}
	}
	for _, nick := range nicks {
		drop(fsm.Fold(nick))
	}
	if len(list) == 0 {
		delete(x.lists, c)
	}
}

// list is c's monitored nicks, sorted.
func (x *monitorIndex) list(c *client) []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]string, 0, len(x.lists[c]))
	for _, nick := range x.lists[c] {
		out = append(out, nick)
	}
	sortSlice(out, func(a, b string) bool { return fsm.Fold(a) < fsm.Fold(b) })
	return out
}

// watching is the clients monitoring a nick.
func (x *monitorIndex) watching(nick string) []*client {
	x.mu.Lock()
	defer x.mu.Unlock()
	w := x.watchers[fsm.Fold(nick)]
	if len(w) == 0 {
		return nil
	}
	out := make([]*client, 0, len(w))
	for c := range w {
		out = append(out, c)
	}
	return out
}

// handleMONITOR answers MONITOR + targets, - targets, C, L and S.
func handleMONITOR(c *client, m ircmsg.Message, rb *respBuf) {
	op := strings.ToUpper(m.Param(0))
	var targets []string
	for _, t := range strings.Split(m.Param(1), ",") {
		if t = strings.TrimSpace(t); t != "" {
			targets = append(targets, t)
		}
	}
	switch op {
	case "+":
		if len(targets) == 0 {
			rb.add(c.numericMsg("461", "MONITOR", "Not enough parameters"))
			return
		}
		var valid []string
		for _, t := range targets {
			if validNick(t) {
				valid = append(valid, t)
			}
		}
		added, refused := c.s.monitors.add(c, valid)
		if len(refused) > 0 {
			rb.add(c.numericMsg("734", strconv.Itoa(maxMonitor), strings.Join(refused, ","), "Monitor list is full."))
		}
		c.monitorStatus(rb, added)
		c.monitorMetadata(rb, added)
	case "-":
		if len(targets) == 0 {
			rb.add(c.numericMsg("461", "MONITOR", "Not enough parameters"))
			return
		}
		c.s.monitors.remove(c, targets, false)
	case "C":
		c.s.monitors.remove(c, nil, true)
	case "L":
		for _, chunk := range commaChunks(c.s.monitors.list(c)) {
			rb.add(c.numericMsg("732", chunk))
		}
		rb.add(c.numericMsg("733", "End of MONITOR list"))
	case "S":
		c.monitorStatus(rb, c.s.monitors.list(c))
	default:
		rb.add(c.failMsg("MONITOR", "INVALID_PARAMS", "Unknown MONITOR subcommand", m.Param(0)))
	}
}

// monitorStatus answers 730 for the nicks online and 731 for the others.
func (c *client) monitorStatus(rb *respBuf, nicks []string) {
	if len(nicks) == 0 {
		return
	}
	var online, offline []string
	c.s.state.Read(func(st *fsm.State) {
		for _, nick := range nicks {
			if se, ok := st.SessionByNick(nick); ok {
				online = append(online, se.Hostmask())
			} else if rm := st.RemoteByNick(nick); rm != nil {
				online = append(online, rm.Ref().Hostmask())
			} else {
				offline = append(offline, nick)
			}
		}
	})
	for _, chunk := range commaChunks(online) {
		rb.add(c.numericMsg("730", chunk))
	}
	for _, chunk := range commaChunks(offline) {
		rb.add(c.numericMsg("731", chunk))
	}
}

// commaChunks joins items with commas into lists of at most monitorLineBudget bytes.
func commaChunks(items []string) []string {
	var out []string
	var cur strings.Builder
	for _, it := range items {
		if cur.Len() > 0 && cur.Len()+1+len(it) > monitorLineBudget {
			out = append(out, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteByte(',')
		}
		cur.WriteString(it)
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// renderConf renders an event for the conformance features (MONITOR, metadata, channel renames)
// after its channel lines (pos: its position in its log entry). It runs on the render goroutine,
// with s.rendered.mu held.
func (s *Server) renderConf(e *fsm.Event, pos int) {
	if e.Kind == fsm.EvRename {
		s.renderRename(e, pos)
		return
	}
	s.notifyMonitors(e)
	s.renderMetadata(e)
}

// notifyMonitors tells the local clients monitoring an event's actor what changed. It runs on
// the render goroutine, after the event's channel lines, with s.rendered.mu held.
func (s *Server) notifyMonitors(e *fsm.Event) {
	switch e.Kind {
	case fsm.EvRegister:
		s.monitorNumeric(e.Actor.Nick, "730", e.Actor.Hostmask())
		s.monitorOnlineMetadata(e)
	case fsm.EvJoin:
		if e.Presence == fsm.PresenceAppeared { // a peer server's user, in its first linked channel
			s.monitorNumeric(e.Actor.Nick, "730", e.Actor.Hostmask())
		}
	case fsm.EvPart:
		if e.Presence == fsm.PresenceGone && !s.remoteNickStillOnline(e, e.Actor.Nick) {
			s.monitorNumeric(e.Actor.Nick, "731", e.Actor.Nick)
		}
	case fsm.EvQuit:
		if !s.remoteNickStillOnline(e, e.Actor.Nick) {
			s.monitorNumeric(e.Actor.Nick, "731", e.Actor.Nick)
		}
	case fsm.EvNick:
		if fsm.Fold(e.OldNick) == fsm.Fold(e.Actor.Nick) {
			break // a change of case only: the monitored nick neither came online nor left
		}
		if !s.remoteNickStillOnline(e, e.OldNick) {
			s.monitorNumeric(e.OldNick, "731", e.OldNick)
		}
		s.monitorNumeric(e.Actor.Nick, "730", e.Actor.Hostmask())
	case fsm.EvAway:
		params := []string{}
		if e.Text != "" {
			params = append(params, e.Text)
		}
		s.monitorExtended(e, capAwayNotify, "AWAY", params...)
	case fsm.EvAccount:
		s.monitorExtended(e, capAccountNotify, "ACCOUNT", e.Actor.DID)
	case fsm.EvSetname:
		s.monitorExtended(e, capSetname, "SETNAME", e.Text)
	}
}

// remoteNickStillOnline reports, for an event of a peer server's user (no session here), whether
// nick is still in use by someone else: a session of this cluster, or a user of another peer. A
// peer's users share no nick space with the cluster's sessions, so the one leaving is not the
// only one a MONITOR list can mean. Events of the cluster's own sessions keep their meaning.
func (s *Server) remoteNickStillOnline(e *fsm.Event, nick string) bool {
	if e.Actor.ID != "" || len(s.monitors.watching(nick)) == 0 {
		return false
	}
	online := false
	s.state.Read(func(st *fsm.State) { online = st.NickInUse(nick) || st.RemoteByNick(nick) != nil })
	return online
}

// monitorNumeric sends numeric with one list item to the clients monitoring nick.
func (s *Server) monitorNumeric(nick, numeric, item string) {
	watchers := s.monitors.watching(nick)
	if len(watchers) == 0 {
		return
	}
	nicks := s.sessionNicks(watchers)
	for i, c := range watchers {
		c.deliver(&outMsg{msg: ircmsg.Message{Source: s.cfg.ServerName, Command: numeric, Params: []string{nicks[i], item}}}, false)
	}
}

// monitorExtended sends an extended-monitor line to the clients monitoring the actor that have
// extended-monitor and want, and that did not get it from a channel they share with the actor.
func (s *Server) monitorExtended(e *fsm.Event, want capBits, command string, params ...string) {
	watchers := s.monitors.watching(e.Actor.Nick)
	if len(watchers) == 0 {
		return
	}
	out := &outMsg{msg: ircmsg.Message{Source: e.Actor.Hostmask(), Command: command, Params: params}, time: serverTimeMS(e.Time), account: e.Actor.DID}
	out.msg.ForceTrailing = command == "SETNAME"
	for _, c := range watchers {
		if c.id == e.Actor.ID || !c.has(capExtendedMonitor) || !c.has(want) || s.sharesRendered(c, e.Channels) {
			continue
		}
		c.deliver(out, false)
	}
}

// sharesRendered reports whether c is a rendered member of one of channels. s.rendered.mu is held.
func (s *Server) sharesRendered(c *client, channels []string) bool {
	for _, name := range channels {
		if s.rendered.has(name, c.id) {
			return true
		}
	}
	return false
}

// sessionNicks is each client's current nick, as the replicated state has it ("*" for one that
// is gone). It never reads a client's own fields, which belong to its reader goroutine.
func (s *Server) sessionNicks(list []*client) []string {
	out := make([]string, len(list))
	s.state.Read(func(st *fsm.State) {
		for i, c := range list {
			if out[i] = st.SessionNick(c.id); out[i] == "" {
				out[i] = "*"
			}
		}
	})
	return out
}
