package irc

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/palaver-chat/palaver/gateway/irc/ircmsg"
	"github.com/palaver-chat/palaver/raft/fsm"
)

// maxWhowas bounds the nicks a node remembers for WHOWAS. Every node renders every session's
// end and nick change, so every node keeps the same recent past without replicating it.
const maxWhowas = 1024

// whowasEntry is a nick as it was when its session ended or changed nick.
type whowasEntry struct {
	nick, user, host, realname, did string
	at                              time.Time
}

// whowasLog is a bounded ring of former nicks, newest last.
type whowasLog struct {
	// lock tier 9 (leaf)
	mu      sync.Mutex
	entries []whowasEntry
	next    int
}

func (w *whowasLog) record(r fsm.SessionRef, at time.Time) {
	if r.Nick == "" {
		return
	}
	e := whowasEntry{nick: r.Nick, user: r.User, host: r.Host, realname: r.Realname, did: r.DID, at: at}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.entries) < maxWhowas {
		w.entries = append(w.entries, e)
		return
	}
	w.entries[w.next] = e
	w.next = (w.next + 1) % maxWhowas
}

// lookup returns up to limit entries for nick (case-folded), newest first; limit ≤ 0 means all.
func (w *whowasLog) lookup(nick string, limit int) []whowasEntry {
	want := fsm.Fold(nick)
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []whowasEntry
	n := len(w.entries)
	for i := 0; i < n; i++ {
		e := w.entries[(w.next+n-1-i)%n]
		if fsm.Fold(e.nick) == want {
			out = append(out, e)
			if limit > 0 && len(out) == limit {
				break
			}
		}
	}
	return out
}

// handleWHOWAS answers WHOWAS <nick>[,<nick>...] [<count>] (314, 312, 330, 369; 406 when unknown).
func handleWHOWAS(c *client, m ircmsg.Message, rb *respBuf) {
	if m.Param(0) == "" {
		rb.add(c.numericMsg("431", "No nickname given"))
		return
	}
	limit := 0
	if len(m.Params) > 1 {
		if n, err := strconv.Atoi(m.Param(1)); err == nil && n > 0 {
			limit = n
		}
	}
	for _, nick := range strings.Split(m.Param(0), ",") {
		if nick == "" {
			continue
		}
		entries := c.s.whowas.lookup(nick, limit)
		if len(entries) == 0 {
			rb.add(c.numericMsg("406", nick, "There was no such nickname"))
		}
		for _, e := range entries {
			rb.add(c.numericMsg("314", e.nick, e.user, e.host, "*", e.realname))
			rb.add(c.numericMsg("312", e.nick, c.s.cfg.ServerName, e.at.UTC().Format(time.RFC1123)))
			if e.did != "" {
				rb.add(c.numericMsg("330", e.nick, e.did, "was logged in as"))
			}
		}
		rb.add(c.numericMsg("369", nick, "End of WHOWAS"))
	}
}
