package fsm

// Channel renames (IRCv3 draft/channel-rename): a channel keeps everything under its new name —
// members, modes, lists, topic, pins, founder and DID operators, incarnation (so the history rule
// is unchanged), every DID's read marker and favourite entry of it, and what the modules keep of
// it (Module.ChannelRenamed; raft/fsm/meta moves the channel's metadata). The chat history
// stored under the former name stays there (the event store is not replicated state): history
// of the new name starts at the rename.

// TypeRenameChannel is the command type of RenameChannel. Persisted: never renumber or reuse.
const TypeRenameChannel CommandType = 35

// Result codes of renames. Persisted: never renumber or reuse.
const (
	ErrChannelNameInUse Code = 28 // FAIL RENAME CHANNEL_NAME_IN_USE
	ErrCannotRename     Code = 29 // FAIL RENAME CANNOT_RENAME: another prefix type, or users of peer servers in it
)

func init() {
	registerCommands(map[CommandType]CommandSpec{TypeRenameChannel: spec("rename-channel", (*Applier).renameChannel)})
	nameCode(ErrChannelNameInUse, "channel-name-in-use")
	nameCode(ErrCannotRename, "cannot-rename")
}

// RenameChannel renames Channel to NewName (both folded). Channel operators only.
type RenameChannel struct {
	Session string `json:"session"`
	Channel string `json:"channel"`
	NewName string `json:"new_name"`
	Reason  string `json:"reason,omitempty"`
}

func (RenameChannel) CommandType() CommandType { return TypeRenameChannel }

func (a *Applier) renameChannel(c RenameChannel) Result {
	if !validChannelName(c.Channel) || !validChannelName(c.NewName) || len(c.Reason) > MaxTopicLen {
		return Result{Code: ErrInvalid}
	}
	se := a.st.sessions[c.Session]
	if se == nil {
		return Result{Code: ErrNoSuchSession}
	}
	ch := a.st.channels[c.Channel]
	if ch == nil {
		return Result{Code: ErrNoSuchChannel}
	}
	if !a.st.isChannelOp(ch, se) {
		return Result{Code: ErrChanOpNeeded}
	}
	if c.NewName == c.Channel {
		return Result{Code: NoChange}
	}
	if a.st.channels[c.NewName] != nil {
		return Result{Code: ErrChannelNameInUse}
	}
	if c.NewName[0] != c.Channel[0] || len(a.st.RemoteIn(c.Channel)) > 0 {
		return Result{Code: ErrCannotRename}
	}
	old := c.Channel
	delete(a.st.channels, old)
	ch.Name = c.NewName
	a.st.channels[ch.Name] = ch
	if byID, ok := a.st.local[old]; ok { // this node's members of it (view.go)
		delete(a.st.local, old)
		a.st.local[ch.Name] = byID
		a.st.localVersion++
	}
	for id := range ch.members {
		if m := a.st.sessions[id]; m != nil {
			delete(m.channels, old)
			m.channels[ch.Name] = true
		}
	}
	for _, markers := range a.st.readMarkers {
		if at, ok := markers[old]; ok {
			delete(markers, old)
			markers[ch.Name] = at
		}
	}
	for did, list := range a.st.favorites {
		for i, name := range list {
			if name == old { // a new slice: a remembered result may share the old one
				renamed := append([]string(nil), list...)
				renamed[i] = ch.Name
				a.st.favorites[did] = renamed
				break
			}
		}
	}
	a.st.recordRename(old, ch.Name, a.env.Time)
	a.channelRenamed(old, ch.Name)
	a.emit(Event{Kind: EvRename, Actor: se.Ref(), Channel: ch.Name, OldChannel: old, Text: c.Reason})
	return Result{Code: OK}
}

// EvRename is the event of a channel renamed from OldChannel to Channel (folded names); Text is
// the reason (draft/channel-rename).
const EvRename EventKind = 42
