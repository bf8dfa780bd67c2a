package fsm

import "sort"

// Per-DID limits. A DID costs nothing to mint (did:key), so whatever a DID keeps in the replicated
// state after its sessions end is bounded per DID here, and empty channels expire (ExpireChannels).
const (
	// MaxFoundedPerDID caps the channels a DID is the founder of; creating (or re-founding) one
	// more is refused with ErrTooManyFounded.
	MaxFoundedPerDID = 50
	// MaxSessionKeysPerDID caps the MSGSIG session keys (source local-session) filed under a DID.
	// Registering one more forgets the oldest one that no live session signs with (its messages
	// then verify as unverifiable); when every one of them is in use, the new one is refused with
	// ErrTooManyKeys.
	MaxSessionKeysPerDID = 32
)

// TypeExpireChannels is registered here rather than in commands.go's list; see registerCommands.
const TypeExpireChannels CommandType = 32

func init() {
	registerCommands(map[CommandType]CommandSpec{
		TypeExpireChannels: spec("expire-channels", (*Applier).expireChannels),
	})
}

// ExpireChannels deletes the channels that have had no member for long enough, as of the time the
// proposer stamped (the leader proposes it periodically): unowned ones (no founder) after
// UnownedAfter, founded ones after OwnedAfter; 0 keeps them. A channel with users of a peer server
// in it is kept. A channel found empty without a recorded time (a state restored from an older
// snapshot) starts counting now. Result.Count is the number of channels deleted.
type ExpireChannels struct {
	UnownedAfter int64 `json:"unowned_after_ms"`
	OwnedAfter   int64 `json:"owned_after_ms"`
}

func (ExpireChannels) CommandType() CommandType { return TypeExpireChannels }

func (a *Applier) expireChannels(c ExpireChannels) Result {
	if c.UnownedAfter < 0 || c.OwnedAfter < 0 {
		return Result{Code: ErrInvalid}
	}
	remote := map[string]bool{}
	for _, m := range a.st.remoteMembers {
		for ch := range m.channels {
			remote[ch] = true
		}
	}
	var expired []string
	for name, ch := range a.st.channels {
		if len(ch.members) > 0 || remote[name] {
			continue
		}
		if ch.EmptySince == 0 {
			ch.EmptySince = a.env.Time
			continue
		}
		after := c.UnownedAfter
		if ch.FounderDID != "" {
			after = c.OwnedAfter
		}
		if after > 0 && a.env.Time-ch.EmptySince >= after {
			expired = append(expired, name)
		}
	}
	sort.Strings(expired)
	for _, name := range expired {
		a.deleteChannel(name)
	}
	return Result{Code: OK, Count: len(expired)}
}

// foundedBy counts the channels did is the founder of.
func (s *State) foundedBy(did string) int { return s.founded[did] }

// addChannel files a new channel (its founder, if any, counted in founded).
func (s *State) addChannel(ch *Channel) {
	s.channels[ch.Name] = ch
	s.dropRedirect(ch.Name)
	if ch.FounderDID != "" {
		s.founded[ch.FounderDID]++
	}
}

// setFounder makes did the founder of ch, which has none.
func (s *State) setFounder(ch *Channel, did string) {
	ch.FounderDID = did
	s.founded[did]++
}

// deleteChannel removes a channel (and its founder's count), and tells the modules.
func (a *Applier) deleteChannel(name string) {
	s := a.st
	ch := s.channels[name]
	if ch == nil {
		return
	}
	if did := ch.FounderDID; did != "" {
		if s.founded[did]--; s.founded[did] <= 0 {
			delete(s.founded, did)
		}
	}
	delete(s.channels, name)
	delete(s.local, name)
	a.channelDeleted(name)
}

// makeRoomForSessionKey keeps did under MaxSessionKeysPerDID local-session keys before one more
// is filed: it forgets the oldest (by registration, then kid) that no live session signs with,
// and reports false when every one is in use.
func (a *Applier) makeRoomForSessionKey(did string) bool {
	var keys []*KeyRecord
	for _, k := range a.st.keys[did] {
		if k.Source == "local-session" {
			keys = append(keys, k)
		}
	}
	if len(keys) < MaxSessionKeysPerDID {
		return true
	}
	inUse := map[string]bool{}
	for _, se := range a.st.sessions {
		if se.DID == did && se.SigningKID != "" {
			inUse[se.SigningKID] = true
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].RegisteredAt != keys[j].RegisteredAt {
			return keys[i].RegisteredAt < keys[j].RegisteredAt
		}
		return keys[i].KID < keys[j].KID
	})
	for excess := len(keys) - MaxSessionKeysPerDID + 1; excess > 0; excess-- {
		i := 0
		for i < len(keys) && inUse[keys[i].KID] {
			i++
		}
		if i == len(keys) {
			return false
		}
		delete(a.st.keys[did], keys[i].KID)
		keys = append(keys[:i], keys[i+1:]...)
	}
	return true
}
