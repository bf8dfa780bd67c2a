package fsm

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// A Module is a replicated feature kept beside the core state (sessions, nicks, channels,
// membership, modes and keys): its own part of the state, encoded as one section of every
// snapshot, the command types it applies and the result codes it answers. A module package
// registers itself from its init function:
//
//	func init() {
//		fsm.Register(fsm.Module{Section: section, Commands: commands, Codes: codes})
//	}
//
// and package raft/fsm/features links every module into the node, one import each.
type Module struct {
	// Section is the module's part of the state (NewSection).
	Section Sectioner
	// Commands are the command types the module applies, by their persisted numbers (Handle).
	Commands map[CommandType]CommandSpec
	// Codes names the result codes the module answers. Their numbers are persisted in
	// snapshots (remembered results): never renumber or reuse one.
	Codes map[Code]string

	// The lifecycle hooks, each optional, let a module keep its section in step with the core:
	// Apply calls them while it applies the command that changed the core (EndSession,
	// PurgeNode, Part, Kick, ExpireChannels, RenameChannel, ...), after the core's change and
	// before the command's event, the modules in the order of their section names. Like a
	// command's apply they are deterministic and change only the module's own section; a hook
	// never creates the section (Section.Of, not Make), so a state without the module's data
	// encodes as before.

	// SessionEnded is called when a session has ended: it is no longer in the state.
	SessionEnded func(a *Applier, se SessionRef)
	// SessionEndedIn is SessionEnded with the channels (folded names, sorted) the session was
	// in when it ended, called right after it.
	SessionEndedIn func(a *Applier, se SessionRef, channels []string)
	// MemberLeft is called when a session has left a channel (folded name) by PART or was
	// kicked from it (locally or by a linked server); not when its session ended.
	MemberLeft func(a *Applier, se SessionRef, channel string)
	// ChannelDeleted is called when a channel (folded name) has been deleted.
	ChannelDeleted func(a *Applier, name string)
	// ChannelRenamed is called when a channel has been renamed from old to name (folded).
	ChannelRenamed func(a *Applier, old, name string)
}

// Sectioner is what Register needs of a Section: *Section[S] implements it.
type Sectioner interface {
	sectionName() string
	slotIndex() int
	decodeSection(data []byte) (any, error)
	set(st *State, v any)
}

// section is the value of sec in s, nil when absent.
func (s *State) section(sec Sectioner) any {
	if i := sec.slotIndex(); i < len(s.sections) {
		return s.sections[i]
	}
	return nil
}

// Section is a module's part of the replicated state, a *S: nil until the module first creates
// it inside Apply (Make), encoded in snapshots under its name while not nil. S must encode and
// decode with encoding/json deterministically (maps and slices, no floats).
type Section[S any] struct {
	name string
	slot int
}

var sectionSlots int // sections made so far; NewSection runs from package initialisation only

// NewSection makes the section named name, the key of its part of a snapshot. Call it once, in a
// package-level variable of the module.
func NewSection[S any](name string) *Section[S] {
	k := &Section[S]{name: name, slot: sectionSlots}
	sectionSlots++
	return k
}

func (k *Section[S]) sectionName() string { return k.name }

func (k *Section[S]) slotIndex() int { return k.slot }

func (k *Section[S]) decodeSection(data []byte) (any, error) {
	v := new(S)
	if err := json.Unmarshal(data, v); err != nil {
		return nil, fmt.Errorf("section %s: %w", k.name, err)
	}
	return v, nil
}

// Of returns the section's state in st, or nil before the module first created it. Readers get
// it under Machine.Read and must neither change it nor keep it after the callback returns.
func (k *Section[S]) Of(st *State) *S {
	if k.slot < len(st.sections) {
		if v, ok := st.sections[k.slot].(*S); ok {
			return v
		}
	}
	return nil
}

// Make returns the section's state for a command being applied, creating it empty on first
// use; from then on snapshots carry it.
func (k *Section[S]) Make(a *Applier) *S {
	if v := k.Of(a.st); v != nil {
		return v
	}
	v := new(S)
	k.set(a.st, v)
	return v
}

func (k *Section[S]) set(st *State, v any) {
	if k.slot >= len(st.sections) {
		st.sections = append(st.sections, make([]any, k.slot+1-len(st.sections))...)
	}
	st.sections[k.slot] = v
}

// CommandSpec registers one command type: its name (for logs), the feature level of the version
// that introduced it (levels.go), how its body decodes and how Apply applies it.
type CommandSpec struct {
	name   string
	module string // the section name of the module that registered it; "" for the core's
	level  int
	// levelOf, when set, is the level a command of the type needs beyond level, from its fields.
	levelOf func(Command) int
	decode  func(body []byte) (Command, error)
	apply   func(a *Applier, cmd Command) Result
}

// Handle builds the registration of command type C, introduced at feature level level and
// applied by f. f is deterministic: it reads the state, the proposer's stamps (Applier.Time,
// Applier.Node) and the command, nothing else.
func Handle[C Command](name string, level int, f func(*Applier, C) Result) CommandSpec {
	sp := spec(name, f)
	sp.level = level
	return sp
}

// WithLevelOf makes a command of the type need the level f gives it when that is above the
// type's own: a field added to an existing type since a release needs the later level.
func (sp CommandSpec) WithLevelOf(f func(Command) int) CommandSpec {
	sp.levelOf = f
	return sp
}

// modules are the registered modules by section name.
var modules = map[string]Module{}

// Register adds a module: its command types, result codes and section. Call it from the
// module's init function. A command number, code number or section name already taken is a
// programming error and panics when the program starts.
func Register(m Module) {
	name := m.Section.sectionName()
	if _, taken := modules[name]; taken || slices.Contains(snapshotOrder, name) && coreSections[name].encode != nil {
		panic(fmt.Sprintf("fsm: section %q registered twice", name))
	}
	for typ, sp := range m.Commands {
		if _, ok := commandLevels[typ]; ok {
			panic(fmt.Sprintf("fsm: command type %d (%s) has a level already", typ, sp.name))
		}
		commandLevels[typ] = sp.level
		sp.module = name
		m.Commands[typ] = sp
	}
	registerCommands(m.Commands)
	for c, n := range m.Codes {
		nameCode(c, n)
	}
	modules[name] = m
	hooked = nil
	for _, n := range slices.Sorted(maps.Keys(modules)) {
		if m := modules[n]; m.SessionEnded != nil || m.SessionEndedIn != nil || m.MemberLeft != nil ||
			m.ChannelDeleted != nil || m.ChannelRenamed != nil {
			hooked = append(hooked, m)
		}
	}
}

// hooked are the registered modules with a lifecycle hook, by section name.
var hooked []Module

func (a *Applier) sessionEnded(se SessionRef, channels []string) {
	for _, m := range hooked {
		if m.SessionEnded != nil {
			m.SessionEnded(a, se)
		}
		if m.SessionEndedIn != nil {
			m.SessionEndedIn(a, se, channels)
		}
	}
}

func (a *Applier) memberLeft(se SessionRef, channel string) {
	for _, m := range hooked {
		if m.MemberLeft != nil {
			m.MemberLeft(a, se, channel)
		}
	}
}

func (a *Applier) channelDeleted(name string) {
	for _, m := range hooked {
		if m.ChannelDeleted != nil {
			m.ChannelDeleted(a, name)
		}
	}
}

func (a *Applier) channelRenamed(old, name string) {
	for _, m := range hooked {
		if m.ChannelRenamed != nil {
			m.ChannelRenamed(a, old, name)
		}
	}
}

// State returns the state the command applies to. Module code reads the core through it and
// changes only its own section.
func (a *Applier) State() *State { return a.st }

// Time is the time the proposer stamped on the command (unix ms).
func (a *Applier) Time() int64 { return a.env.Time }

// Node is the node that proposed the command.
func (a *Applier) Node() string { return a.env.Node }

// EncryptChannel sets +E on a channel (folded name) that exists and lacks it, as actor, and
// emits the mode change; it reports whether it changed anything.
func (a *Applier) EncryptChannel(name string, actor SessionRef) bool {
	ch := a.st.channels[name]
	if ch == nil || ch.Encrypted {
		return false
	}
	ch.Encrypted = true
	a.emit(Event{Kind: EvMode, Actor: actor, Channel: ch.Name, Modes: []ModeChange{{Add: true, Mode: "E"}}})
	return true
}

// SetSessionBot sets or clears user mode +B on the session id when it is authenticated as did;
// it reports whether such a session exists.
func (a *Applier) SetSessionBot(id, did string, bot bool) bool {
	se := a.st.sessions[id]
	if se == nil || se.DID != did {
		return false
	}
	se.Bot = bot
	return true
}

// Emit adds an event of the command, delivered to the observer after the command applied.
func (a *Applier) Emit(e Event) { a.emit(e) }

// NewApplier is an Applier over st outside any Machine, for a module's tests that fill a state
// of their own (NewState) to its bounds without going through the log. Never use it on a state a
// Machine holds.
func NewApplier(st *State, env Envelope) *Applier { return &Applier{st: st, env: env} }
