package irc

import (
	"strings"
	"sync"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// Read markers (IRCv3 draft/read-marker): MARKREAD <target> [timestamp=…] reads or moves the
// marker of the client's DID for a channel or a direct conversation. Markers are replicated
// (fsm.SetReadMarker) and every session of the DID with the capability, on any node, is told
// when one moves; a client with the capability gets the marker of a channel when it joins.
// The specification has markers for every client: a guest's markers, and a DID's markers for a
// nick that has no DID (a guest's, which has no lasting conversation), are kept for the connection
// alone (connMarkers), with the same rules and the same bound, and end with it.

// markerKey is where a target's marker is filed: the folded channel name, or the DID of the
// other side of a direct conversation ("" when the nick names nobody known).
func (c *client) markerKey(target string) string {
	if strings.HasPrefix(target, "#") || strings.HasPrefix(target, "&") {
		return fsm.Fold(target)
	}
	if strings.HasPrefix(target, "did:") {
		return target
	}
	var did string
	c.s.state.Read(func(st *fsm.State) {
		if se, ok := st.SessionByNick(target); ok && se.DID != "" {
			did = se.DID
		} else {
			did = st.NickOwner(fsm.Fold(target))
		}
	})
	return did
}

// markerTarget renders a marker key as the target a client names: the channel, or the nick of
// the DID (the DID itself when it has none).
func markerTarget(st *fsm.State, key string) string {
	if !strings.HasPrefix(key, "did:") {
		if ch, ok := st.Channel(key); ok {
			return ch.Name()
		}
		return key
	}
	if list := st.SessionsByDID(key); len(list) > 0 {
		return list[0].Nick
	}
	if nick := st.OwnedNick(key); nick != "" {
		return nick
	}
	return key
}

func markreadValue(ms int64) string {
	if ms == 0 {
		return "*"
	}
	return "timestamp=" + serverTime(time.UnixMilli(ms))
}

func handleMARKREAD(c *client, m ircmsg.Message, rb *respBuf) {
	target := m.Param(0)
	if target == "" {
		rb.add(c.failMsg("MARKREAD", "NEED_MORE_PARAMS", "Missing target"))
		return
	}
	if len(target) > fsm.MaxReadMarkerTarget {
		rb.add(c.failMsg("MARKREAD", "INVALID_PARAMS", "No such nick or channel", target))
		return
	}
	var at time.Time
	if len(m.Params) >= 2 {
		raw, ok := strings.CutPrefix(m.Param(1), "timestamp=")
		var err error
		if at, err = time.Parse(time.RFC3339Nano, raw); !ok || err != nil || at.UnixMilli() <= 0 {
			rb.add(c.failMsg("MARKREAD", "INVALID_PARAMS", "The timestamp must be timestamp=YYYY-MM-DDThh:mm:ss.sssZ", target, m.Param(1)))
			return
		}
	}
	did, key := c.currentDID(), c.markerKey(target)
	if did == "" || key == "" { // kept for this connection alone
		if key == "" {
			key = "nick:" + fsm.Fold(target)
		}
		var ms int64 // 0: a get
		if !at.IsZero() {
			ms = at.UnixMilli()
		}
		stored, ok := c.markers.set(key, ms)
		if !ok {
			rb.add(c.failMsg("MARKREAD", "INTERNAL_ERROR", "Too many read markers for this connection", target))
			return
		}
		rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: "MARKREAD", Params: []string{target, markreadValue(stored)}})
		return
	}
	if at.IsZero() {
		var stored int64
		c.s.state.Read(func(st *fsm.State) { stored = st.ReadMarker(did, key) })
		rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: "MARKREAD", Params: []string{target, markreadValue(stored)}})
		return
	}
	res, err := c.propose(fsm.SetReadMarker{DID: did, Target: key, At: at.UnixMilli(), Session: c.id})
	if err != nil || (res.Code != fsm.OK && res.Code != fsm.NoChange) {
		rb.add(c.failMsg("MARKREAD", "INTERNAL_ERROR", "The marker could not be stored", target))
		return
	}
	if res.Code == fsm.NoChange { // an older time: the stored marker stands, and the client is told it
		var stored int64
		c.s.state.Read(func(st *fsm.State) { stored = st.ReadMarker(did, key) })
		rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: "MARKREAD", Params: []string{target, markreadValue(stored)}})
	}
	// When it moved, every session of the DID (this one included) hears it as the move renders.
}

// renderReadMarker tells the local sessions of the marker's DID that have the capability.
func (s *Server) renderReadMarker(e *fsm.Event) {
	var ids []string
	var target string
	s.state.Read(func(st *fsm.State) {
		for _, se := range st.SessionsByDID(e.Actor.DID) {
			ids = append(ids, se.ID)
		}
		target = markerTarget(st, e.Channel)
	})
	line := ircmsg.Message{Source: s.cfg.ServerName, Command: "MARKREAD", Params: []string{target, markreadValue(e.MarkerAt)}}
	for _, id := range ids {
		if c := s.localClient(id); c != nil && c.has(capReadMarker) {
			c.deliver(&outMsg{msg: line}, id == e.Actor.ID)
		}
	}
}

// joinMarker sends the client's marker for a channel it just joined.
func (c *client) joinMarker(rb *respBuf, channel string) {
	if !c.has(capReadMarker) {
		return
	}
	did := c.currentDID()
	var at int64
	var name string
	c.s.state.Read(func(st *fsm.State) {
		if did != "" {
			at = st.ReadMarker(did, channel)
		}
		name = markerTarget(st, channel)
	})
	if did == "" {
		at, _ = c.markers.set(channel, 0)
	}
	rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: "MARKREAD", Params: []string{name, markreadValue(at)}})
}

// connMarkers are the read markers kept for one connection: by folded channel name, DID, or
// "nick:" and the folded nick of a user without a DID. At most fsm.MaxReadMarkers.
type connMarkers struct {
	// lock tier 9 (leaf)
	mu sync.Mutex
	at map[string]int64 // unix ms
}

// set moves the marker of key to at (unix ms) if that is later, and returns the marker then;
// at 0 only reads it. ok is false when a new key would pass the bound.
func (m *connMarkers) set(key string, at int64) (stored int64, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	stored, known := m.at[key]
	if at <= stored {
		return stored, true
	}
	if !known && len(m.at) >= fsm.MaxReadMarkers {
		return stored, false
	}
	if m.at == nil {
		m.at = map[string]int64{}
	}
	m.at[key] = at
	return at, true
}
