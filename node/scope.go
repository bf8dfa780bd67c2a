package node

import "github.com/palaver-chat/palaver/raft/fsm"

// channelScope tells the event store what a channel venue's channel is now (its incarnation and
// whether it is public), so that a channel created again under an old name never serves what an
// earlier one kept private (eventstore's "Channel incarnations").
type channelScope struct{ machine *fsm.Machine }

func (c channelScope) scope(venue string) (incarnation string, public, ok bool) {
	c.machine.Read(func(st *fsm.State) {
		incarnation, public, ok = st.ChannelScope(venue)
	})
	return incarnation, public, ok
}
