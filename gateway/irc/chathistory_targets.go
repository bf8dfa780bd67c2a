package irc

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/node/chat"
	"github.com/palaver-chat/palaver/node/eventstore"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// partnerDIDTag names the correspondent of a direct conversation listed by TARGETS by its DID
// (freeq's freeq.at/partner-did): the nick is only for display and may have changed hands, so
// clients key the conversation by the DID, as they key live direct messages by the account tag.
const partnerDIDTag = "freeq.at/partner-did"

// maxTargetCandidates bounds the DIDs whose direct-message venue with the caller TARGETS looks at.
const maxTargetCandidates = 5000

// historyTarget is one conversation listed by CHATHISTORY TARGETS.
type historyTarget struct {
	name   string // channel name, or the correspondent's nick (its DID when it has none)
	did    string // the correspondent's DID; "" for a channel
	venue  string
	latest time.Time
}

// chathistoryTargets answers CHATHISTORY TARGETS <from> <to> <limit> (draft/chathistory-targets):
// the channels the client is in and the direct conversations of its DID whose latest message
// falls strictly between the two timestamps (either may be * for open), each with the time of
// that message, oldest first. The limit counts from the first timestamp, as BETWEEN's does:
// `TARGETS <t1> <t2> n` with t1 before t2 lists the n earliest after t1, and with t1 after t2 the
// n latest before t1; with a first bound of * (freeq's `TARGETS * * 50`) it lists the most
// recent n. A direct conversation's line carries the correspondent's DID (partnerDIDTag) for
// message-tags clients.
func chathistoryTargets(c *client, m ircmsg.Message, rb *respBuf) {
	fail := func(code, text string, ctx ...string) { rb.add(c.failMsg("CHATHISTORY", code, text, ctx...)) }
	if len(m.Params) < 4 {
		fail("NEED_MORE_PARAMS", "Missing parameters", "TARGETS")
		return
	}
	from, ok1 := targetsBound(m.Param(1))
	to, ok2 := targetsBound(m.Param(2))
	if !ok1 || !ok2 {
		fail("INVALID_PARAMS", "Invalid timestamp", "TARGETS")
		return
	}
	limit, err := strconv.Atoi(m.Param(3))
	if err != nil || limit < 1 {
		fail("INVALID_PARAMS", "Invalid limit", "TARGETS", m.Param(3))
		return
	}
	limit = min(limit, maxHistoryLimit)
	if c.s.history == nil {
		fail("MESSAGE_ERROR", "History is unavailable", "TARGETS")
		return
	}
	// fromEnd: the limit counts back from the later bound.
	fromEnd := from.IsZero() || (!to.IsZero() && to.Before(from))
	if !from.IsZero() && !to.IsZero() && to.Before(from) {
		from, to = to, from
	}
	ctx, cancel := context.WithTimeout(c.s.ctx, 10*time.Second)
	defer cancel()
	var found []historyTarget
	for _, t := range c.targetCandidates() {
		latest, ok, err := c.latestIn(ctx, t.venue, from, to)
		if err != nil {
			c.s.log.Error("chathistory targets", "venue", t.venue, "err", err)
			fail("MESSAGE_ERROR", "History is unavailable", "TARGETS")
			return
		}
		if ok {
			t.latest = latest
			found = append(found, t)
		}
	}
	sortSlice(found, func(a, b historyTarget) bool {
		if !a.latest.Equal(b.latest) {
			return a.latest.Before(b.latest)
		}
		return a.name < b.name
	})
	if len(found) > limit {
		if fromEnd {
			found = found[len(found)-limit:]
		} else {
			found = found[:limit]
		}
	}
	batchID := ""
	if c.has(capBatch) {
		batchID = c.s.nextBatchID()
		rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: "BATCH", Params: []string{"+" + batchID, "draft/chathistory-targets"}})
	}
	for _, t := range found {
		line := ircmsg.Message{Source: c.s.cfg.ServerName, Command: "CHATHISTORY", Params: []string{"TARGETS", t.name, serverTime(t.latest)}}
		tags := map[string]string{}
		if batchID != "" {
			tags["batch"] = batchID
		}
		if t.did != "" && c.has(capMessageTags) {
			tags[partnerDIDTag] = t.did
		}
		if len(tags) > 0 {
			line.Tags = tags
		}
		rb.add(line)
	}
	if batchID != "" {
		rb.add(ircmsg.Message{Source: c.s.cfg.ServerName, Command: "BATCH", Params: []string{"-" + batchID}})
	}
}

// targetsBound reads a TARGETS bound: timestamp=<RFC 3339> or * (open; zero time for the lower
// bound, far future for the upper, which the caller does not tell apart: * is open either way).
func targetsBound(s string) (time.Time, bool) {
	if s == "*" {
		return time.Time{}, true
	}
	b, ok := parseRef(s, false)
	if !ok || b.MsgID != "" {
		return time.Time{}, false
	}
	return b.Time, true
}

// targetCandidates lists the venues the client may read: its channels, and the direct venues
// between its DID and every other DID the state knows (sessions, nick owners, filed keys) or
// every guest connected now.
func (c *client) targetCandidates() []historyTarget {
	me := c.currentDID()
	var out []historyTarget
	c.s.state.Read(func(st *fsm.State) {
		if se, ok := st.Session(c.id); ok {
			for name := range se.Channels() {
				if ch, ok := st.Channel(name); ok && ch.CanRead(c.id, me) {
					out = append(out, historyTarget{name: ch.Name(), venue: name})
				}
			}
		}
		if me == "" {
			return
		}
		nickOf := map[string]string{}
		for nick, did := range st.NickOwners() {
			if nickOf[did] == "" {
				nickOf[did] = nick
			}
		}
		for se := range st.Sessions() {
			if se.DID != "" {
				nickOf[se.DID] = se.Nick
			}
		}
		for did := range st.AllKeys() {
			if _, ok := nickOf[did]; !ok {
				nickOf[did] = ""
			}
		}
		n := 0
		for did, nick := range nickOf {
			if did == me || !strings.HasPrefix(did, "did:") || n == maxTargetCandidates {
				continue
			}
			n++
			if nick == "" {
				nick = did
			}
			out = append(out, historyTarget{name: nick, did: did, venue: chat.DMVenue(me, did)})
		}
		// The guests connected now: a conversation with one is keyed by its connection
		// (guestParty) and named by its current nick.
		for se := range st.Sessions() {
			if se.DID == "" && se.ID != c.id && n < maxTargetCandidates {
				n++
				out = append(out, historyTarget{name: se.Nick, venue: dmVenue(me, c.id, "", guestParty(se.ID))})
			}
		}
	})
	return out
}

// latestIn finds the time of the newest message of venue and reports whether it lies strictly
// between from and to (zero times are open): a conversation whose latest message is after the
// window is not in it, though it has older messages there.
func (c *client) latestIn(ctx context.Context, venue string, from, to time.Time) (time.Time, bool, error) {
	msgs, err := c.historyView().Latest(ctx, venue, eventstore.Bound{}, 1)
	if errors.Is(err, eventstore.ErrNotFound) || (err == nil && len(msgs) == 0) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	latest := msgs[len(msgs)-1].Time
	if (!from.IsZero() && !latest.After(from)) || (!to.IsZero() && !latest.Before(to)) {
		return time.Time{}, false, nil
	}
	return latest, true, nil
}
