package fsm

import "errors"

// Feature levels let nodes of two versions share a cluster during a rolling upgrade. A node of an
// older version panics on a log entry of a command type it does not know (see Machine.Apply), so
// a command introduced after a release may enter the log only once every server of the Raft
// configuration applies it. Each command type has the level of the version that introduced it
// (commandLevels); each node gossips Level, the highest it applies, and the proposer refuses a
// command above the lowest level of the servers (package raft, with EntryLevel), answering
// ErrClusterUpgrading. A node that gossips no level (v0.1.0, the first release) is at level 0.

// Level is the highest feature level this build applies.
const Level = 2

// ErrClusterUpgrading refuses a command that some server of the cluster, running an earlier
// version, could not apply. Nothing changed; the command is possible once every node runs this
// version.
var ErrClusterUpgrading = errors.New("the cluster is being upgraded: this change is possible once every node runs this version")

// commandLevels is the feature level of every registered command type: 0 for those of v0.1.0,
// 1 and 2 for those added since (2: the rejoin module's). A new core command type is added here
// at Level, after raising Level when it is the first of a release; a module gives its types'
// levels to Handle and Register adds them here. A test checks this table against the registry.
var commandLevels = map[CommandType]int{
	// v0.1.0
	TypeRegisterSession: 0, TypeChangeNick: 0, TypeAuthenticate: 0, TypeEndSession: 0, TypeJoin: 0,
	TypePart: 0, TypeKick: 0, TypeTopic: 0, TypeMode: 0, TypeInvite: 0, TypeAway: 0, TypeOper: 0,
	TypePurgeNode: 0, TypeSetFavorites: 0, TypePin: 0, TypeUnpin: 0, TypeRegisterKey: 0,
	TypeRetireKey: 0, TypeFederatedTopic: 0, TypeFederatedMode: 0, TypeFederatedPin: 0,
	TypeRemotePresence: 0, TypeFederatedKick: 0, TypeFederatedInvite: 0, TypeSetReadMarker: 0,
	TypeSetRealname: 0, TypeSetBot: 0, TypeExpireChannels: 0, TypeRenameChannel: 0,

	// level 1
	TypeSetInvisible: 1, TypeSetClientPassword: 1, TypeRevokeClientPassword: 1,
	TypeRegisterAccount: 1, TypeSetNodeKey: 1,
}

// CommandLevel is the feature level cmd needs: every server must apply at least this level. A
// command of an earlier type that uses a field added since needs the later level (a module says
// so with CommandSpec.WithLevelOf, as the media module does for RecordMedia).
func CommandLevel(cmd Command) int {
	level := commandLevels[cmd.CommandType()]
	if f := commands[cmd.CommandType()].levelOf; f != nil {
		level = max(level, f(cmd))
	}
	return level
}

// EntryLevel is the feature level an encoded log entry (Encode) needs; an entry too short to
// name a type needs none. A type this build does not know is above Level.
func EntryLevel(entry []byte) int {
	if len(entry) == 0 {
		return 0
	}
	typ := CommandType(entry[0])
	level, ok := commandLevels[typ]
	if !ok {
		return Level + 1
	}
	if commands[typ].levelOf != nil {
		if cmd, _, _, err := Decode(entry); err == nil {
			return CommandLevel(cmd)
		}
	}
	return level
}
