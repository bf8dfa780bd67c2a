package fsm

// Fixture assembles a State directly, for the tests of packages that read it and need states
// (times, hosts, lists) that are tedious to reach through Apply. A fixture's State is never a
// Machine's: nothing reachable through Machine.Read can be changed this way. Tests that can reach
// their state through commands use package fsmtest instead.
type Fixture struct{ st *State }

// NewFixture returns a fixture over an empty state.
func NewFixture() *Fixture { return &Fixture{st: NewState()} }

// State is the state assembled so far; later calls keep changing it.
func (f *Fixture) State() *State { return f.st }

// AddSession files a session with its nick in use (and its token, when it has one) and returns
// it; its channels are added with AddMember.
func (f *Fixture) AddSession(se Session) *Session {
	p := &se
	p.channels = map[string]bool{}
	f.st.sessions[p.ID] = p
	f.st.nicks[Fold(p.Nick)] = p.ID
	f.st.noteNick(true, p.Nick, p.DID, p.ID)
	if p.TokenHash != "" {
		f.st.tokens[p.TokenHash] = p.ID
	}
	return p
}

// AddChannel files a channel without members (added with AddMember) and returns it.
func (f *Fixture) AddChannel(ch Channel) *Channel {
	p := &ch
	p.members = map[string]*Member{}
	f.st.addChannel(p)
	return p
}

// Channel returns a filed channel for the test to change, or nil.
func (f *Fixture) Channel(name string) *Channel { return f.st.channels[name] }

// AddMember makes a filed session a member of a filed channel with the prefixes of m.
func (f *Fixture) AddMember(channel, sessionID string, m Member) {
	ch, se := f.st.channels[channel], f.st.sessions[sessionID]
	if ch == nil || se == nil {
		panic("fsm fixture: AddMember of an unknown channel " + channel + " or session " + sessionID)
	}
	ch.members[sessionID] = &m
	se.channels[channel] = true
	f.st.indexMember(channel, se, &m)
}

// SetNickOwner records did as the owner of a folded nick.
func (f *Fixture) SetNickOwner(folded, did string) {
	if old, ok := f.st.nickOwners[folded]; ok {
		f.st.noteNick(false, folded, old, "")
	}
	f.st.nickOwners[folded] = did
	f.st.noteNick(true, folded, did, "")
	f.st.didNicks[did] = folded
}

// AddDIDOp makes did an operator of a filed channel.
func (f *Fixture) AddDIDOp(channel, did string) {
	ch := f.st.channels[channel]
	if ch.didOps == nil {
		ch.didOps = map[string]bool{}
	}
	ch.didOps[did] = true
}

// AddKey files a public key under did.
func (f *Fixture) AddKey(did string, k KeyRecord) {
	if f.st.keys[did] == nil {
		f.st.keys[did] = map[string]*KeyRecord{}
	}
	f.st.keys[did][k.KID] = &k
}
