package fsm

import "sort"

// Presence of users of peer servers in linked channels (see federation/peering). It lives in the
// replicated state so that every node of the cluster lists remote members in NAMES, WHO and WHOIS,
// whichever node received the peer's envelope; it is dropped when the link to the peer drops
// (RemoteClear) and rebuilt from the peer's snapshot (RemoteMembers) when it comes back.

// MaxRemoteMembers caps the remote members kept for one peer.
const MaxRemoteMembers = 10000

// RemoteMember is a user of a peer server present in linked channels.
type RemoteMember struct {
	Peer     string          `json:"peer"` // the peer server's DID
	Nick     string          `json:"nick"`
	User     string          `json:"user"`
	Host     string          `json:"host"`
	DID      string          `json:"did,omitempty"`
	channels map[string]bool // folded channel names
}

// Ref is the member as an event actor (no session id: it has no session here).
func (m *RemoteMember) Ref() SessionRef {
	return SessionRef{Nick: m.Nick, User: m.User, Host: m.Host, DID: m.DID}
}

func remoteKey(peer, nick string) string { return peer + " " + Fold(nick) }

// Remote presence operations.
const (
	RemoteJoin    = "join"    // Member joined Channel
	RemotePart    = "part"    // Member left Channel (parted or was kicked)
	RemoteQuit    = "quit"    // Member left every channel
	RemoteNick    = "nick"    // Member is now NewNick
	RemoteMembers = "members" // Members are all of the peer's users in Channel
	RemoteClear   = "clear"   // the link to the peer dropped: forget all its users
)

// PresenceChange tells, on the EvJoin or EvPart of a peer server's user, whether this cluster
// just started or stopped knowing of that user: its first linked channel, or its last. MONITOR
// reports such a user online from its first join until it leaves its last linked channel or quits.
type PresenceChange uint8

const (
	PresenceSame     PresenceChange = iota // the user was, and stays, known here
	PresenceAppeared                       // the user's first linked channel
	PresenceGone                           // the user left its last linked channel
)

// RemotePresence changes what this cluster knows of a peer's users in linked channels. A join
// (also through a members snapshot) into a channel that bans the member's hostmask or DID is
// refused (ErrBanned for a single join; skipped in a snapshot).
type RemotePresence struct {
	Peer    string         `json:"peer"`
	Op      string         `json:"op"`
	Channel string         `json:"channel,omitempty"`
	Member  RemoteMember   `json:"member"`
	Members []RemoteMember `json:"members,omitempty"`
	NewNick string         `json:"new_nick,omitempty"`
	Reason  string         `json:"reason,omitempty"`
}

func (RemotePresence) CommandType() CommandType { return TypeRemotePresence }

func (a *Applier) remotePresence(c RemotePresence) Result {
	if c.Peer == "" {
		return Result{Code: ErrInvalid}
	}
	switch c.Op {
	case RemoteJoin:
		return a.remoteJoin(c.Peer, c.Channel, c.Member)
	case RemotePart:
		m := a.st.remoteMembers[remoteKey(c.Peer, c.Member.Nick)]
		if m == nil || !m.channels[c.Channel] {
			return Result{Code: NoChange}
		}
		a.remoteLeave(m, c.Channel, c.Reason)
	case RemoteQuit:
		m := a.st.remoteMembers[remoteKey(c.Peer, c.Member.Nick)]
		if m == nil {
			return Result{Code: NoChange}
		}
		a.remoteQuit(m, c.Reason)
	case RemoteNick:
		return a.remoteNick(c.Peer, c.Member.Nick, c.NewNick)
	case RemoteMembers:
		return a.remoteSnapshot(c.Peer, c.Channel, c.Members)
	case RemoteClear:
		keys := make([]string, 0)
		for k, m := range a.st.remoteMembers {
			if m.Peer == c.Peer {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			a.remoteQuit(a.st.remoteMembers[k], c.Reason)
		}
		if len(keys) == 0 {
			return Result{Code: NoChange}
		}
	default:
		return Result{Code: ErrInvalid}
	}
	return Result{Code: OK}
}

func validRemote(m RemoteMember) bool {
	return m.Nick != "" && len(m.Nick) <= MaxNickLen && len(m.User) <= 64 && len(m.Host) <= 256
}

func (a *Applier) remoteJoin(peer, channel string, in RemoteMember) Result {
	if !validRemote(in) || !validChannelName(channel) {
		return Result{Code: ErrInvalid}
	}
	if ch := a.st.channels[channel]; ch != nil && ch.IsBanned(in.Nick+"!"+in.User+"@"+in.Host, in.DID) {
		return Result{Code: ErrBanned}
	}
	key := remoteKey(peer, in.Nick)
	m := a.st.remoteMembers[key]
	change := PresenceSame
	if m == nil {
		change = PresenceAppeared
		if a.remoteCount(peer) >= MaxRemoteMembers {
			return Result{Code: ErrListFull}
		}
		if a.st.remoteMembers == nil {
			a.st.remoteMembers = map[string]*RemoteMember{}
		}
		m = &RemoteMember{Peer: peer, Nick: in.Nick, User: in.User, Host: in.Host, DID: in.DID, channels: map[string]bool{}}
		a.st.remoteMembers[key] = m
	}
	if m.channels[channel] {
		return Result{Code: NoChange}
	}
	if len(m.channels) >= MaxChannelsPerSession {
		return Result{Code: ErrTooManyChannels}
	}
	m.channels[channel] = true
	a.emit(Event{Kind: EvJoin, Actor: m.Ref(), Channel: channel, Presence: change})
	return Result{Code: OK}
}

func (a *Applier) remoteCount(peer string) int {
	n := 0
	for _, m := range a.st.remoteMembers {
		if m.Peer == peer {
			n++
		}
	}
	return n
}

// remoteLeave takes a member out of one channel (and forgets it when that was its last).
func (a *Applier) remoteLeave(m *RemoteMember, channel, reason string) {
	delete(m.channels, channel)
	change := PresenceSame
	if len(m.channels) == 0 {
		delete(a.st.remoteMembers, remoteKey(m.Peer, m.Nick))
		change = PresenceGone
	}
	a.emit(Event{Kind: EvPart, Actor: m.Ref(), Channel: channel, Text: reason, Presence: change})
}

func (a *Applier) remoteQuit(m *RemoteMember, reason string) {
	delete(a.st.remoteMembers, remoteKey(m.Peer, m.Nick))
	a.emit(Event{Kind: EvQuit, Actor: m.Ref(), Channels: sortedKeys(m.channels), Text: reason})
}

func (a *Applier) remoteNick(peer, oldNick, newNick string) Result {
	m := a.st.remoteMembers[remoteKey(peer, oldNick)]
	if m == nil || newNick == "" || len(newNick) > MaxNickLen {
		return Result{Code: ErrInvalid}
	}
	if _, taken := a.st.remoteMembers[remoteKey(peer, newNick)]; taken && Fold(newNick) != Fold(oldNick) {
		return Result{Code: ErrNickInUse}
	}
	delete(a.st.remoteMembers, remoteKey(peer, oldNick))
	m.Nick = newNick
	a.st.remoteMembers[remoteKey(peer, newNick)] = m
	a.emit(Event{Kind: EvNick, Actor: m.Ref(), OldNick: oldNick, Channels: sortedKeys(m.channels)})
	return Result{Code: OK}
}

// remoteSnapshot makes members the peer's whole membership of channel: those missing leave,
// the new ones join (bans apply).
func (a *Applier) remoteSnapshot(peer, channel string, members []RemoteMember) Result {
	if !validChannelName(channel) {
		return Result{Code: ErrInvalid}
	}
	want := map[string]RemoteMember{}
	for _, m := range members {
		if validRemote(m) {
			want[remoteKey(peer, m.Nick)] = m
		}
	}
	var gone []string
	for k, m := range a.st.remoteMembers {
		if _, keep := want[k]; m.Peer == peer && m.channels[channel] && !keep {
			gone = append(gone, k)
		}
	}
	sort.Strings(gone)
	for _, k := range gone {
		a.remoteLeave(a.st.remoteMembers[k], channel, "")
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		a.remoteJoin(peer, channel, want[k])
	}
	return Result{Code: OK}
}

// RemoteIn returns the remote members of channel, sorted by nick.
func (s *State) RemoteIn(channel string) []*RemoteMember {
	var out []*RemoteMember
	for _, m := range s.remoteMembers {
		if m.channels[channel] {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return remoteKey(out[i].Peer, out[i].Nick) < remoteKey(out[j].Peer, out[j].Nick) })
	return out
}

// RemoteByNick returns the remote member using nick (the first by peer when several peers have
// one), or nil.
func (s *State) RemoteByNick(nick string) *RemoteMember {
	var found *RemoteMember
	for _, m := range s.remoteMembers {
		if Fold(m.Nick) == Fold(nick) && (found == nil || m.Peer < found.Peer) {
			found = m
		}
	}
	return found
}
