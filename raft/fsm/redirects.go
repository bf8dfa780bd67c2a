package fsm

import "sort"

// Channel redirections (draft/channel-rename, "Channel redirection"): the former names of renamed
// channels, so that a client that was away during a rename and JOINs the old name is sent to the
// channel's current name (FAIL JOIN CHANNEL_RENAMED, or 470 and the join of the new name for a
// client without the capability). They are replicated, so every node redirects alike, and
// bounded: a redirection lasts RedirectTTL from its rename, at most MaxRedirects are kept (the
// oldest go first), and one ends as soon as a channel of that name exists again (it was created,
// or another channel was renamed to it). A chain of renames (#a to #b, then #b to #c) sends the
// oldest name to the newest.

// Limits of redirections, enforced in Apply.
const (
	MaxRedirects = 1024
	RedirectTTL  = int64(7 * 24 * 60 * 60 * 1000) // unix ms: a week
)

// Redirects maps the former (folded) names of renamed channels to where they went.
type Redirects struct {
	Names map[string]Redirect `json:"names"`
}

// Redirect is one former channel name: the channel's name now, and when it was renamed away.
type Redirect struct {
	To string `json:"to"`
	At int64  `json:"at"` // unix ms, the rename's proposer time
}

// recordRename notes that channel old is now called name, at time at (Apply only).
func (s *State) recordRename(old, name string, at int64) {
	if s.redirects == nil {
		s.redirects = &Redirects{Names: map[string]Redirect{}}
	}
	r := s.redirects.Names
	delete(r, name) // a channel is called that now
	for from, to := range r {
		if to.To == old {
			r[from] = Redirect{To: name, At: at}
		}
	}
	r[old] = Redirect{To: name, At: at}
	s.pruneRedirects(at)
}

// pruneRedirects drops the redirections older than RedirectTTL at time now, then the oldest
// past MaxRedirects (by time, then name: the order is the same on every node).
func (s *State) pruneRedirects(now int64) {
	r := s.redirects.Names
	for from, to := range r {
		if now-to.At > RedirectTTL {
			delete(r, from)
		}
	}
	if len(r) <= MaxRedirects {
		return
	}
	names := make([]string, 0, len(r))
	for from := range r {
		names = append(names, from)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := r[names[i]], r[names[j]]
		if a.At != b.At {
			return a.At < b.At
		}
		return names[i] < names[j]
	})
	for _, from := range names[:len(r)-MaxRedirects] {
		delete(r, from)
	}
}

// dropRedirect ends the redirection of a name a channel now has.
func (s *State) dropRedirect(name string) {
	if s.redirects != nil {
		delete(s.redirects.Names, name)
	}
}

// RenamedTo reports where a JOIN of channel name (folded) should go at time now (unix ms): the
// current name of the channel renamed away from it, when no channel has that name, the
// redirection is younger than RedirectTTL, and the channel it leads to still exists.
func (s *State) RenamedTo(name string, now int64) (string, bool) {
	if s.redirects == nil || s.channels[name] != nil {
		return "", false
	}
	r, ok := s.redirects.Names[name]
	if !ok || now-r.At > RedirectTTL || s.channels[r.To] == nil {
		return "", false
	}
	return r.To, true
}
