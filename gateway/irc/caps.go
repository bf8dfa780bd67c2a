package irc

import (
	"slices"
	"sort"
	"strings"
)

// capability bits. Not persisted.
type capBits uint32

const (
	capMessageTags capBits = 1 << iota
	capServerTime
	capAccountTag
	capEchoMessage
	capExtendedJoin
	capAccountNotify
	capAwayNotify
	capMultiPrefix
	capBatch
	capLabeledResponse
	capChathistory
	capSASL
	capMsgSig // freeq.at/msgsig: the client may sign with MSGSIG keys (signing works without it too)
	capUserhostInNames
	capReadMarker
	capMultiline
	capRedaction
	capSetname
	capExtendedMonitor
	capMetadata
	capMetadataNotify
	capChannelRename
	capEventPlayback // draft/event-playback: channel events in history batches (playback.go)
	capAct           // freeq.at/act: the client speaks the signed task events (ACT TAGMSGs); they are relayed to message-tags clients either way
	capMetadata3     // draft/metadata-3: draft/metadata-2's commands with metadata-3's replies (metadata.go)
	capCapNotify     // cap-notify: on for every CAP LS 302 client, which cannot turn it off (capNotifyCap)
)

// capNotifyCap is cap-notify (IRCv3 cap-notify): a client that has it would be told with CAP NEW
// and CAP DEL when the capabilities this server offers change. A node's offering is fixed for its
// lifetime (the SASL mechanisms, account registration and draft/metadata-3 come from its
// configuration), so it never has a CAP NEW or CAP DEL to send. The capability is on for every
// client that asked for CAP LS 302 and cannot be turned off there; any client may CAP REQ it and
// gets an ACK. CAP LS names it only when it fits on the one line (Server.capLSLines): the spec
// lets a server leave it out for 302 clients, and a second LS line would break freeq's
// JavaScript SDK.
const capNotifyCap = "cap-notify"

// capAnyMetadata is either metadata capability: both get the same keys, subscriptions and
// notifications.
const capAnyMetadata = capMetadata | capMetadata3

var capNames = map[string]capBits{
	"message-tags":      capMessageTags,
	"server-time":       capServerTime,
	"account-tag":       capAccountTag,
	"echo-message":      capEchoMessage,
	"extended-join":     capExtendedJoin,
	"account-notify":    capAccountNotify,
	"away-notify":       capAwayNotify,
	"multi-prefix":      capMultiPrefix,
	"batch":             capBatch,
	"labeled-response":  capLabeledResponse,
	"draft/chathistory": capChathistory,
	"sasl":              capSASL,
	"freeq.at/msgsig":   capMsgSig,
	"userhost-in-names": capUserhostInNames,
	"draft/read-marker": capReadMarker,
	multilineCap:        capMultiline,
	redactionCap:        capRedaction,
	"setname":           capSetname,
	"extended-monitor":  capExtendedMonitor,
	metadataCap:         capMetadata,
	metadataNotifyCap:   capMetadataNotify,
	metadata3Cap:        capMetadata3,
	channelRenameCap:    capChannelRename,
	"freeq.at/act":      capAct,
	eventPlaybackCap:    capEventPlayback,
	capNotifyCap:        capCapNotify,
}

// capsFirst are offered first, in this order: sasl and the capabilities freeq's clients request.
// Those clients send one CAP REQ per LS line and CAP END on the first ACK, authenticating only
// if that ACK carried sasl, so what they need must be on the first line even when the list grows
// past one.
var capsFirst = []string{"sasl", "message-tags", "server-time", "batch", "multi-prefix", "echo-message",
	"account-notify", "account-tag", "extended-join", "away-notify", "draft/chathistory", multilineCap,
	"draft/read-marker", "freeq.at/msgsig", "freeq.at/act"}

// maxLine is the length of an IRC line without its tags and CRLF.
const maxLine = 510

// capLSLines renders CAP LS as the capability lists of the lines to send: one line for clients
// before 302 (they cannot read continuations), and for 302 clients each line filled up to
// budget bytes (the room the line's prefix leaves), all but the last to be marked with "*"
// (IRCv3 capability negotiation, multiline replies).
func capLSLines(v302 bool, budget int) []string {
	return fillCapLSLines(capLS(v302), v302, budget)
}

// fillCapLSLines fills CAP LS lines of at most budget bytes with names, in order.
func fillCapLSLines(names []string, v302 bool, budget int) []string {
	if list := strings.Join(names, " "); !v302 || len(list) <= budget {
		return []string{list}
	}
	var lines []string
	line := ""
	for _, name := range names {
		if line != "" && len(line)+1+len(name) > budget {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += name
	}
	return append(lines, line)
}

// capLSBudget is the room for the capability list in a CAP LS line to nick from server: a line
// of maxLine bytes less ":<server> CAP <nick> LS * :".
func capLSBudget(server, nick string) int {
	return maxLine - len(":"+server+" CAP "+nick+" LS * :")
}

// capLS lists the capabilities CAP LS offers: capsFirst, then the rest in name order, cap-notify
// aside (the server adds it when it fits, Server.capLSLines). A client
// asking for 302 gets the values (sasl's mechanisms, multiline and metadata limits).
func capLS(v302 bool) []string {
	first := make(map[string]bool, len(capsFirst))
	for _, n := range capsFirst {
		first[n] = true
	}
	rest := make([]string, 0, len(capNames))
	for n := range capNames {
		if !first[n] && n != capNotifyCap {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	names := append(slices.Clone(capsFirst), rest...)
	if v302 {
		for i, n := range names {
			switch n {
			case "sasl":
				names[i] = "sasl=ATPROTO-CHALLENGE"
			case multilineCap:
				names[i] += "=" + multilineCapValue
			case metadataCap:
				names[i] += "=" + metadataCapValue
			case metadata3Cap:
				names[i] += "=before-connect," + metadataCapValue
			}
		}
	}
	return names
}

// parseCapReq resolves a CAP REQ list; ok is false if any name is unknown (all-or-nothing).
func parseCapReq(list string) (add, remove capBits, ok bool) {
	for _, name := range strings.Fields(list) {
		neg := strings.HasPrefix(name, "-")
		name = strings.ToLower(strings.TrimPrefix(name, "-"))
		bit, known := capNames[name]
		if !known {
			return 0, 0, false
		}
		if neg {
			remove |= bit
		} else {
			add |= bit
		}
	}
	return add, remove, true
}

func (b capBits) names() string {
	var out []string
	for n, bit := range capNames {
		if b&bit != 0 {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}
