package testcluster

import (
	"slices"
	"strings"
	"time"
)

// Answers of object writes.
const (
	answerOK            = "ok"
	answerInUse         = "in use"         // NICK: 433
	answerAlreadyPinned = "already pinned" // PIN of a pinned message
	answerNotPinned     = "not pinned"     // UNPIN of a message that is not pinned
)

// Nick writes.
const (
	nickClaim   = "claim"   // NICK <pool nick> from the connection's own nick
	nickRelease = "release" // NICK back to the connection's own nick, or the session ending
)

// nickSpec: a register per nick holding its owner (the owning connection's identity), "" when
// the nick is free. A claim succeeds on a free nick and answers "in use" on a nick someone else
// holds; a release frees the nick its actor holds.
var nickSpec = objectSpec{kind: "nick", init: "", apply: func(owner string, op ObjectOp) (bool, string) {
	switch op.Arg {
	case nickClaim:
		switch {
		case op.Outcome == Unknown:
			if owner == "" {
				return true, op.Actor
			}
			return true, owner
		case op.Result == answerOK:
			return owner == "", op.Actor
		case op.Result == answerInUse:
			return owner != "" && owner != op.Actor, owner
		}
	case nickRelease:
		switch {
		case op.Outcome == Unknown:
			if owner == op.Actor {
				return true, ""
			}
			return true, owner
		case op.Result == answerOK:
			return owner == op.Actor, ""
		}
	}
	return false, owner
}}

// modeSpec: a channel's mode set in the form of RPL_CHANNELMODEIS ("+ntk key"). A write is a
// MODE change list ("+m", "-k", "+k key", "+nt-mk"); it always succeeds for an operator, and a
// change that is already in effect changes nothing.
var modeSpec = objectSpec{kind: "mode", init: "+", apply: func(state string, op ObjectOp) (bool, string) {
	modes, key, _ := strings.Cut(state, " ")
	fields := strings.Fields(op.Arg)
	if len(fields) == 0 {
		return false, state
	}
	next := applyModeChanges(modes, key, fields[0], fields[1:])
	return op.Outcome == Unknown || op.Result == answerOK, next
}}

// modeOrder is the order in which the server lists a channel's modes.
const modeOrder = "ntimEk"

// applyModeChanges applies a MODE change string with its arguments to a mode string and key and
// returns the canonical state.
func applyModeChanges(modes, key, changes string, args []string) string {
	set := map[byte]bool{}
	for i := 0; i < len(modes); i++ {
		set[modes[i]] = true
	}
	add := true
	for i := 0; i < len(changes); i++ {
		switch c := changes[i]; {
		case c == '+':
			add = true
		case c == '-':
			add = false
		case c == 'k' && add:
			if len(args) > 0 {
				key, args = args[0], args[1:]
			}
		case c == 'k':
			key = ""
		case strings.IndexByte(modeOrder, c) >= 0:
			set[c] = add
		}
	}
	set['k'] = key != ""
	return canonicalModes(set, key)
}

func canonicalModes(set map[byte]bool, key string) string {
	b := []byte{'+'}
	for i := 0; i < len(modeOrder); i++ {
		if set[modeOrder[i]] {
			b = append(b, modeOrder[i])
		}
	}
	if set['k'] {
		return string(b) + " " + key
	}
	return string(b)
}

// parseModeReply turns the mode string and key of an RPL_CHANNELMODEIS (324) into the form of
// modeSpec's states.
func parseModeReply(modes, key string) string {
	set := map[byte]bool{}
	for i := 0; i < len(modes); i++ {
		if strings.IndexByte(modeOrder, modes[i]) >= 0 {
			set[modes[i]] = true
		}
	}
	if !set['k'] {
		key = ""
	}
	return canonicalModes(set, key)
}

// maxPins is the server's bound on a channel's pin list (fsm.MaxPins); the workload stays under
// it, and the model keeps it anyway.
const maxPins = 50

// Pin writes are "pin <msgid>" and "unpin <msgid>".
const (
	pinVerb   = "pin"
	unpinVerb = "unpin"
)

// pinSpec: a channel's pin list, newest first, as msgids joined by commas. PIN of a pinned
// message answers "already pinned" and changes nothing; UNPIN of one that is not pinned answers
// "not pinned".
var pinSpec = objectSpec{kind: "pin", init: "", apply: func(state string, op ObjectOp) (bool, string) {
	verb, msgid, _ := strings.Cut(op.Arg, " ")
	var pins []string
	if state != "" {
		pins = strings.Split(state, ",")
	}
	pinned := slices.Contains(pins, msgid)
	switch verb {
	case pinVerb:
		if pinned {
			return op.Outcome == Unknown || op.Result == answerAlreadyPinned, state
		}
		pins = append([]string{msgid}, pins...)
		if len(pins) > maxPins {
			pins = pins[:maxPins]
		}
		return op.Outcome == Unknown || op.Result == answerOK, strings.Join(pins, ",")
	case unpinVerb:
		if !pinned {
			return op.Outcome == Unknown || op.Result == answerNotPinned, state
		}
		pins = slices.DeleteFunc(pins, func(p string) bool { return p == msgid })
		return op.Outcome == Unknown || op.Result == answerOK, strings.Join(pins, ",")
	}
	return false, state
}}

// CheckNicks checks nick claims, releases and fenced WHOIS reads: a register per nick holding
// its owner. timeout bounds porcupine (0: no bound).
func CheckNicks(ops []ObjectOp, timeout time.Duration) ObjectVerdict {
	return nickSpec.check(ops, timeout)
}

// CheckModes checks MODE changes and fenced MODE queries: a mode set per channel.
func CheckModes(ops []ObjectOp, timeout time.Duration) ObjectVerdict {
	return modeSpec.check(ops, timeout)
}

// CheckPins checks PIN and UNPIN and fenced PINS reads: a pin list per channel.
func CheckPins(ops []ObjectOp, timeout time.Duration) ObjectVerdict {
	return pinSpec.check(ops, timeout)
}
